-- Bookstore workload (TPC-W-like, after DBT-1): primary keys and secondary indexes.
--
-- Run after bookstore_load(). Every statement ends with a semicolon at the end of a
-- line and there is no other semicolon, so that the statements can be split there and
-- run in parallel (statements on the same table wait for each other, they do not fail).

ALTER TABLE country ADD PRIMARY KEY (co_id);
ALTER TABLE author ADD PRIMARY KEY (a_id);
ALTER TABLE item ADD PRIMARY KEY (i_id);
ALTER TABLE customer ADD PRIMARY KEY (c_id);
ALTER TABLE address ADD PRIMARY KEY (addr_id);
ALTER TABLE orders ADD PRIMARY KEY (o_id);
ALTER TABLE order_line ADD PRIMARY KEY (ol_o_id, ol_id);
ALTER TABLE cc_xacts ADD PRIMARY KEY (cx_o_id);
ALTER TABLE shopping_cart ADD PRIMARY KEY (sc_id);
ALTER TABLE shopping_cart_line ADD PRIMARY KEY (scl_sc_id, scl_i_id);

-- Login by user name (buy request, order display).
CREATE UNIQUE INDEX customer_uname ON customer (c_uname);

-- New products: the newest items of a subject.
CREATE INDEX item_subject_pub_date ON item (i_subject, i_pub_date DESC, i_title);

-- Search by subject, results in title order.
CREATE INDEX item_subject_title ON item (i_subject, i_title);

-- Search by title word: full-text index over the title's words.
CREATE INDEX item_title_words ON item USING gin (to_tsvector('simple', i_title));

-- Search by author: the author's last name, then the author's items.
CREATE INDEX author_lname ON author (a_lname);
CREATE INDEX item_author ON item (i_a_id);

-- Order display: a customer's most recent order.
CREATE INDEX orders_customer ON orders (o_c_id, o_id);
