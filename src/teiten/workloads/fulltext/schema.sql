-- The fulltext suite's tables (METHODS S9): the documents, the chosen keywords with their
-- true hit counts (documents that contain them as a substring), and where the documents
-- came from. For a fresh UTF-8 database.
CREATE TABLE docs (
    id int PRIMARY KEY,
    body text NOT NULL
);

CREATE TABLE fts_keywords (
    keyword text PRIMARY KEY,
    class text NOT NULL,  -- ja2, ja3, en (chosen); ja1, other (a user's own keywords)
    band text NOT NULL,   -- the target share of documents: 0.1%, 1%, 10%
    hits int NOT NULL     -- SELECT count(*) FROM docs WHERE body LIKE '%keyword%'
);

CREATE TABLE fts_corpus (
    source text NOT NULL,     -- "generated" or the corpus file's path
    documents int NOT NULL,
    characters bigint NOT NULL,
    sha256 text NOT NULL,     -- of the documents, one per line: equal on every server of a study
    generator text NOT NULL   -- wordfreq version, seed and options, or the file's size
);
