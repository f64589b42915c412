-- The "bigram" method: pg_bigm's idea with nothing but core PostgreSQL. The distinct
-- 2-character substrings of lower(t), for a GIN index on an array (the array opclass's @>
-- needs no recheck; the query's own LIKE removes the false candidates, as a Filter).
-- Each character once (string_to_table) and each with the next (lead): substr(t, i, 2)
-- for every i would walk the multibyte string from its start each time, and took 1.6x as
-- long to index. Needs PostgreSQL 14 or later (string_to_table, a SQL-standard body).
CREATE OR REPLACE FUNCTION fts_bigrams(t text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN ARRAY(
    SELECT DISTINCT pair
    FROM (SELECT c || lead(c) OVER (ORDER BY n) AS pair
          FROM string_to_table(lower(t), NULL) WITH ORDINALITY AS chars(c, n)) AS pairs
    WHERE pair IS NOT NULL);
