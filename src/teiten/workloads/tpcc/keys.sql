-- TPC-C-like workload: primary keys and secondary indexes, created after the load.
--
-- Every statement ends with a semicolon at the end of a line and no semicolon appears
-- anywhere else, so the file can be split on those lines and the statements run on
-- several connections at once (statements on the same table simply wait for each other).
-- history has no key (the spec gives it none). No foreign keys.

ALTER TABLE warehouse ADD PRIMARY KEY (w_id);
ALTER TABLE district ADD PRIMARY KEY (d_w_id, d_id);
ALTER TABLE customer ADD PRIMARY KEY (c_w_id, c_d_id, c_id);
ALTER TABLE new_order ADD PRIMARY KEY (no_w_id, no_d_id, no_o_id);
ALTER TABLE orders ADD PRIMARY KEY (o_w_id, o_d_id, o_id);
ALTER TABLE order_line ADD PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number);
ALTER TABLE item ADD PRIMARY KEY (i_id);
ALTER TABLE stock ADD PRIMARY KEY (s_w_id, s_i_id);

-- Payment and Order-Status by last name: the customers of a district with a given
-- C_LAST, in C_FIRST order.
CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first);

-- Order-Status: the last order of a customer.
CREATE UNIQUE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);
