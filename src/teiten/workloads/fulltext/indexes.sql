-- One CREATE INDEX per method, each after a "-- method: NAME" line (the suite reads them by
-- name). "none" has no index: its searches are sequential scans, the baseline.

-- method: pg_trgm
-- contrib. Trigrams; a LIKE pattern of fewer than 3 characters between wildcards gives no
-- trigram, so 2-character keywords cannot use this index selectively.
CREATE INDEX docs_trgm ON docs USING gin (body gin_trgm_ops)

-- method: pg_bigm
-- https://github.com/pgbigm/pg_bigm (untested here: not packaged for this machine).
CREATE INDEX docs_bigm ON docs USING gin (body gin_bigm_ops)

-- method: pgroonga
-- https://pgroonga.github.io (untested here: not packaged for this machine). The default
-- operator class for text, pgroonga_text_full_text_search_ops_v2, supports LIKE.
CREATE INDEX docs_pgroonga ON docs USING pgroonga (body)

-- method: bigram
CREATE INDEX docs_bigram ON docs USING gin (fts_bigrams(body))

-- method: tsvector
-- Words as the default parser splits them: a run of Japanese characters between punctuation
-- is one "word", so this finds words, not substrings.
CREATE INDEX docs_tsvector ON docs USING gin (to_tsvector('simple', body))

-- method: rum
-- https://github.com/postgrespro/rum (Debian: postgresql-NN-rum).
CREATE INDEX docs_rum ON docs USING rum (to_tsvector('simple', body) rum_tsvector_ops)
