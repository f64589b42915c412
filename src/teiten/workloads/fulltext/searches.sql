-- One search per kind, each after a "-- search: NAME" line. {pattern} is the LIKE pattern
-- '%keyword%' (with % _ and \ escaped), {keyword} the keyword; both are put in as literals,
-- not bind parameters, so that the planner sees them as a user's query would show them.

-- search: like
-- none, pg_trgm, pg_bigm, pgroonga
SELECT id FROM docs WHERE body LIKE {pattern}

-- search: bigram
SELECT id FROM docs WHERE fts_bigrams(body) @> fts_bigrams({keyword}) AND body LIKE {pattern}

-- search: words
-- tsvector, rum: whole words (or a phrase of words) as the 'simple' configuration splits them
SELECT id FROM docs WHERE to_tsvector('simple', body) @@ phraseto_tsquery('simple', {keyword})
