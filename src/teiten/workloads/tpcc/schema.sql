-- TPC-C-like workload: the nine tables of TPC-C (spec clause 1.3) plus tpcc_meta.
--
-- Run once on a fresh database, before load.sql. Primary keys and indexes are created
-- after the load by keys.sql. Every column is NOT NULL except the two the spec leaves
-- empty for undelivered orders (o_carrier_id, ol_delivery_d), so that adding the
-- primary keys later needs no extra NOT NULL scan.
--
-- Types follow clause 1.3.1: "numeric(p,s)" where the spec says signed numeric, char(n)
-- for fixed text, varchar(n) for variable text, timestamp for "date and time", int for
-- identifiers and counters. Departures (all allowed, the spec gives minimum sizes):
--   * w_ytd and d_ytd are numeric(16,2) instead of numeric(12,2): with numeric(12,2) a
--     long run on few warehouses would overflow w_ytd after about four million payments.
--   * counters (c_payment_cnt, c_delivery_cnt, s_ytd, s_order_cnt, s_remote_cnt) are int.
--
-- Fillfactors: warehouse and district are tiny and every Payment / New-Order updates a
-- row in place, so they get 50 (room for several HOT versions per row on each page);
-- customer and stock are updated in place by Payment, Delivery and New-Order and get 80;
-- orders and order_line get 90 because Delivery later fills o_carrier_id and
-- ol_delivery_d (a HOT update when the page has room). history and new_order are
-- insert/delete only and keep the default 100, as does the read-only item.

CREATE TABLE warehouse (
    w_id       int           NOT NULL,
    w_name     varchar(10)   NOT NULL,
    w_street_1 varchar(20)   NOT NULL,
    w_street_2 varchar(20)   NOT NULL,
    w_city     varchar(20)   NOT NULL,
    w_state    char(2)       NOT NULL,
    w_zip      char(9)       NOT NULL,
    w_tax      numeric(4,4)  NOT NULL,
    w_ytd      numeric(16,2) NOT NULL
) WITH (fillfactor = 50);

CREATE TABLE district (
    d_id        int           NOT NULL,
    d_w_id      int           NOT NULL,
    d_name      varchar(10)   NOT NULL,
    d_street_1  varchar(20)   NOT NULL,
    d_street_2  varchar(20)   NOT NULL,
    d_city      varchar(20)   NOT NULL,
    d_state     char(2)       NOT NULL,
    d_zip       char(9)       NOT NULL,
    d_tax       numeric(4,4)  NOT NULL,
    d_ytd       numeric(16,2) NOT NULL,
    d_next_o_id int           NOT NULL
) WITH (fillfactor = 50);

CREATE TABLE customer (
    c_id           int           NOT NULL,
    c_d_id         int           NOT NULL,
    c_w_id         int           NOT NULL,
    c_first        varchar(16)   NOT NULL,
    c_middle       char(2)       NOT NULL,
    c_last         varchar(16)   NOT NULL,
    c_street_1     varchar(20)   NOT NULL,
    c_street_2     varchar(20)   NOT NULL,
    c_city         varchar(20)   NOT NULL,
    c_state        char(2)       NOT NULL,
    c_zip          char(9)       NOT NULL,
    c_phone        char(16)      NOT NULL,
    c_since        timestamp     NOT NULL,
    c_credit       char(2)       NOT NULL,
    c_credit_lim   numeric(12,2) NOT NULL,
    c_discount     numeric(4,4)  NOT NULL,
    c_balance      numeric(12,2) NOT NULL,
    c_ytd_payment  numeric(12,2) NOT NULL,
    c_payment_cnt  int           NOT NULL,
    c_delivery_cnt int           NOT NULL,
    c_data         varchar(500)  NOT NULL
) WITH (fillfactor = 80);

CREATE TABLE history (
    h_c_id   int          NOT NULL,
    h_c_d_id int          NOT NULL,
    h_c_w_id int          NOT NULL,
    h_d_id   int          NOT NULL,
    h_w_id   int          NOT NULL,
    h_date   timestamp    NOT NULL,
    h_amount numeric(6,2) NOT NULL,
    h_data   varchar(24)  NOT NULL
);

CREATE TABLE new_order (
    no_o_id int NOT NULL,
    no_d_id int NOT NULL,
    no_w_id int NOT NULL
);

CREATE TABLE orders (
    o_id         int       NOT NULL,
    o_d_id       int       NOT NULL,
    o_w_id       int       NOT NULL,
    o_c_id       int       NOT NULL,
    o_entry_d    timestamp NOT NULL,
    o_carrier_id int,
    o_ol_cnt     int       NOT NULL,
    o_all_local  int       NOT NULL
) WITH (fillfactor = 90);

CREATE TABLE order_line (
    ol_o_id        int          NOT NULL,
    ol_d_id        int          NOT NULL,
    ol_w_id        int          NOT NULL,
    ol_number      int          NOT NULL,
    ol_i_id        int          NOT NULL,
    ol_supply_w_id int          NOT NULL,
    ol_delivery_d  timestamp,
    ol_quantity    int          NOT NULL,
    ol_amount      numeric(6,2) NOT NULL,
    ol_dist_info   char(24)     NOT NULL
) WITH (fillfactor = 90);

CREATE TABLE item (
    i_id    int          NOT NULL,
    i_im_id int          NOT NULL,
    i_name  varchar(24)  NOT NULL,
    i_price numeric(5,2) NOT NULL,
    i_data  varchar(50)  NOT NULL
);

CREATE TABLE stock (
    s_i_id       int         NOT NULL,
    s_w_id       int         NOT NULL,
    s_quantity   int         NOT NULL,
    s_dist_01    char(24)    NOT NULL,
    s_dist_02    char(24)    NOT NULL,
    s_dist_03    char(24)    NOT NULL,
    s_dist_04    char(24)    NOT NULL,
    s_dist_05    char(24)    NOT NULL,
    s_dist_06    char(24)    NOT NULL,
    s_dist_07    char(24)    NOT NULL,
    s_dist_08    char(24)    NOT NULL,
    s_dist_09    char(24)    NOT NULL,
    s_dist_10    char(24)    NOT NULL,
    s_ytd        int         NOT NULL,
    s_order_cnt  int         NOT NULL,
    s_remote_cnt int         NOT NULL,
    s_data       varchar(50) NOT NULL
) WITH (fillfactor = 80);

-- What was loaded: the number of warehouses and the C constant used for C_LAST at load
-- time (the run-time constant must differ from it as clause 2.1.6.1 requires).
-- Filled by whoever runs the load, not by these scripts.
CREATE TABLE tpcc_meta (
    warehouses  int,
    c_last_load int,
    loaded_at   timestamptz
);
