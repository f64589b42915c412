-- TPC-C-like workload: helper functions and the data loaders (spec clause 4.3).
--
-- Run once after schema.sql; it only creates functions. Then load with
--   SELECT tpcc_load_items();                      -- once, on one connection
--   SELECT tpcc_load_warehouse(w, c_last_load);    -- for w = 1..W, several connections at once
-- Every loader is set-based (INSERT ... SELECT over generate_series). A warehouse loader
-- only inserts rows of its own warehouse and reads no table, so loaders of different
-- warehouses can run concurrently. procs.sql also uses tpcc_rand_int, tpcc_nurand and
-- tpcc_last_name.

-- Uniform random integer within [lo .. hi] (the spec's "random within [x .. y]").
CREATE FUNCTION tpcc_rand_int(lo int, hi int) RETURNS int
LANGUAGE sql VOLATILE
AS $$ SELECT lo + floor(random() * (hi - lo + 1))::int $$;

-- NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x
-- (clause 2.1.6), with the constant C passed in.
CREATE FUNCTION tpcc_nurand(a int, x int, y int, c int) RETURNS int
LANGUAGE sql VOLATILE
AS $$ SELECT (((tpcc_rand_int(0, a) | tpcc_rand_int(x, y)) + c) % (y - x + 1)) + x $$;

-- C_LAST of the number n within [0 .. 999]: the three syllables indexed by the hundreds,
-- tens and units digit of n (clause 4.3.2.3), e.g. 371 -> PRICALLYOUGHT.
CREATE FUNCTION tpcc_last_name(n int) RETURNS varchar
LANGUAGE sql IMMUTABLE STRICT
AS $$
    SELECT s[n / 100 + 1] || s[n / 10 % 10 + 1] || s[n % 10 + 1]
    FROM (SELECT ARRAY['BAR', 'OUGHT', 'ABLE', 'PRI', 'PRES',
                       'ESE', 'ANTI', 'CALLY', 'ATION', 'EING']) AS syllables(s)
$$;

-- n random alphanumeric characters (upper and lower case letters and digits), as bytea
-- so that tpcc_astring can cut pieces out of it in constant time (substr on text has to
-- walk the characters in a multi-byte database encoding).
CREATE FUNCTION tpcc_random_pool(n int) RETURNS bytea
LANGUAGE sql VOLATILE
AS $$
    SELECT convert_to(string_agg(substr('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789',
                                        tpcc_rand_int(1, 62), 1), ''), 'UTF8')
    FROM generate_series(1, n)
$$;

-- The spec's "random a-string [lo .. hi]" (clause 4.3.2.2): a random-length piece, taken at
-- a random offset, of a pool made by tpcc_random_pool (each loader call makes a fresh
-- 256 KiB pool). Generating every character separately would make the load several times
-- slower; cutting from a random pool still gives random strings of the right length
-- distribution, though strings of one load may share substrings.
CREATE FUNCTION tpcc_astring(pool bytea, lo int, hi int) RETURNS text
LANGUAGE sql VOLATILE
AS $$ SELECT encode(substr(pool, tpcc_rand_int(1, length(pool) - hi + 1), tpcc_rand_int(lo, hi)), 'escape') $$;

-- The spec's "random n-string of n digits" for n <= 15 (clause 4.3.2.2).
CREATE FUNCTION tpcc_nstring(n int) RETURNS text
LANGUAGE sql VOLATILE
AS $$ SELECT lpad(floor(random() * 10 ^ n)::bigint::text, n, '0') $$;

-- Zip code: a random n-string of 4 digits followed by "11111" (clause 4.3.2.7).
CREATE FUNCTION tpcc_zip() RETURNS text
LANGUAGE sql VOLATILE
AS $$ SELECT tpcc_nstring(4) || '11111' $$;

-- I_DATA / S_DATA: in 10% of the rows, selected at random, "ORIGINAL" is written over 8
-- consecutive characters at a random position (clause 4.3.3.1).
CREATE FUNCTION tpcc_mark_original(data text) RETURNS text
LANGUAGE sql VOLATILE
AS $$
    SELECT CASE WHEN random() < 0.1
                THEN overlay(d placing 'ORIGINAL' from tpcc_rand_int(1, length(d) - 7) for 8)
                ELSE d END
    FROM (SELECT data) AS t(d)
$$;

-- The 100,000 items; run once for the whole database.
CREATE FUNCTION tpcc_load_items() RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    pool bytea := tpcc_random_pool(262144);
BEGIN
    INSERT INTO item (i_id, i_im_id, i_name, i_price, i_data)
    SELECT i,
           tpcc_rand_int(1, 10000),
           tpcc_astring(pool, 14, 24),
           tpcc_rand_int(100, 10000) / 100.0,
           tpcc_mark_original(tpcc_astring(pool, 26, 50))
    FROM generate_series(1, 100000) AS i;
END
$$;

-- Everything of warehouse w: the warehouse, its 10 districts, 30,000 customers and
-- history rows, 100,000 stock rows, 30,000 orders with their order lines and the 9,000
-- undelivered new orders. c_last_load is the C constant of NURand(255, 0, 999) for C_LAST.
CREATE FUNCTION tpcc_load_warehouse(w int, c_last_load int) RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    pool bytea := tpcc_random_pool(262144);
BEGIN
    INSERT INTO warehouse (w_id, w_name, w_street_1, w_street_2, w_city, w_state, w_zip,
                           w_tax, w_ytd)
    VALUES (w, tpcc_astring(pool, 6, 10), tpcc_astring(pool, 10, 20),
            tpcc_astring(pool, 10, 20), tpcc_astring(pool, 10, 20), tpcc_astring(pool, 2, 2),
            tpcc_zip(), tpcc_rand_int(0, 2000) / 10000.0, 300000.00);

    INSERT INTO district (d_id, d_w_id, d_name, d_street_1, d_street_2, d_city, d_state,
                          d_zip, d_tax, d_ytd, d_next_o_id)
    SELECT d, w, tpcc_astring(pool, 6, 10), tpcc_astring(pool, 10, 20),
           tpcc_astring(pool, 10, 20), tpcc_astring(pool, 10, 20), tpcc_astring(pool, 2, 2),
           tpcc_zip(), tpcc_rand_int(0, 2000) / 10000.0, 30000.00, 3001
    FROM generate_series(1, 10) AS d;

    -- Customers 1..1000 of each district get the last names 0..999 in turn, so that
    -- every name exists in every district; the others get NURand(255, 0, 999).
    INSERT INTO customer (c_id, c_d_id, c_w_id, c_first, c_middle, c_last, c_street_1,
                          c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit,
                          c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt,
                          c_delivery_cnt, c_data)
    SELECT c, d, w, tpcc_astring(pool, 8, 16), 'OE',
           tpcc_last_name(CASE WHEN c <= 1000 THEN c - 1
                               ELSE tpcc_nurand(255, 0, 999, c_last_load) END),
           tpcc_astring(pool, 10, 20), tpcc_astring(pool, 10, 20), tpcc_astring(pool, 10, 20),
           tpcc_astring(pool, 2, 2), tpcc_zip(), tpcc_nstring(8) || tpcc_nstring(8),
           localtimestamp, CASE WHEN random() < 0.1 THEN 'BC' ELSE 'GC' END,
           50000.00, tpcc_rand_int(0, 5000) / 10000.0, -10.00, 10.00, 1, 0,
           tpcc_astring(pool, 300, 500)
    FROM generate_series(1, 10) AS d, generate_series(1, 3000) AS c;

    INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    SELECT c, d, w, d, w, localtimestamp, 10.00, tpcc_astring(pool, 12, 24)
    FROM generate_series(1, 10) AS d, generate_series(1, 3000) AS c;

    INSERT INTO stock (s_i_id, s_w_id, s_quantity, s_dist_01, s_dist_02, s_dist_03,
                       s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09,
                       s_dist_10, s_ytd, s_order_cnt, s_remote_cnt, s_data)
    SELECT i, w, tpcc_rand_int(10, 100),
           tpcc_astring(pool, 24, 24), tpcc_astring(pool, 24, 24), tpcc_astring(pool, 24, 24),
           tpcc_astring(pool, 24, 24), tpcc_astring(pool, 24, 24), tpcc_astring(pool, 24, 24),
           tpcc_astring(pool, 24, 24), tpcc_astring(pool, 24, 24), tpcc_astring(pool, 24, 24),
           tpcc_astring(pool, 24, 24), 0, 0, 0,
           tpcc_mark_original(tpcc_astring(pool, 26, 50))
    FROM generate_series(1, 100000) AS i;

    -- Orders 1..3000 of each district; O_C_ID runs through a random permutation of the
    -- customers (numbering the customers in random order). Orders below 2101 are
    -- delivered: they have a carrier, their lines a delivery date and amount 0; the 900
    -- others are undelivered and also get a new_order row.
    WITH o AS (
        INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt,
                            o_all_local)
        SELECT o_id, d, w, c, localtimestamp,
               CASE WHEN o_id < 2101 THEN tpcc_rand_int(1, 10) END,
               tpcc_rand_int(5, 15), 1
        FROM (SELECT d, c, row_number() OVER (PARTITION BY d ORDER BY random())::int AS o_id
              FROM generate_series(1, 10) AS d, generate_series(1, 3000) AS c) AS permutation
        ORDER BY d, o_id
        RETURNING o_id, o_d_id, o_entry_d, o_ol_cnt
    ), undelivered AS (
        INSERT INTO new_order (no_o_id, no_d_id, no_w_id)
        SELECT o_id, o_d_id, w FROM o WHERE o_id >= 2101
    )
    INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
                            ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
    SELECT o.o_id, o.o_d_id, w, n, tpcc_rand_int(1, 100000), w,
           CASE WHEN o.o_id < 2101 THEN o.o_entry_d END,
           5,
           CASE WHEN o.o_id < 2101 THEN 0.00 ELSE tpcc_rand_int(1, 999999) / 100.0 END,
           tpcc_astring(pool, 24, 24)
    FROM o, generate_series(1, o.o_ol_cnt) AS n;
END
$$;
