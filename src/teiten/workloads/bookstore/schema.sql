-- Bookstore workload (TPC-W-like, after DBT-1): tables and sequences.
--
-- The tables follow the TPC-W logical database design (clause 1.2 and 1.3). Strings are
-- "text" so that the PL/pgSQL functions can return columns without casts. No keys or
-- indexes here: keys.sql adds them after bookstore_load() has filled the tables.
-- Run once in an empty database, before load.sql.

CREATE TABLE country (
    co_id        integer NOT NULL,
    co_name      text    NOT NULL,
    co_exchange  numeric(12, 6) NOT NULL,
    co_currency  text    NOT NULL
);

CREATE TABLE author (
    a_id     integer NOT NULL,
    a_fname  text    NOT NULL,
    a_lname  text    NOT NULL,
    a_mname  text,
    a_dob    date,
    a_bio    text
);

CREATE TABLE item (
    i_id          integer NOT NULL,
    i_title       text    NOT NULL,
    i_a_id        integer NOT NULL,
    i_pub_date    date    NOT NULL,
    i_publisher   text    NOT NULL,
    i_subject     text    NOT NULL,
    i_desc        text,
    i_related1    integer NOT NULL,
    i_related2    integer NOT NULL,
    i_related3    integer NOT NULL,
    i_related4    integer NOT NULL,
    i_related5    integer NOT NULL,
    i_thumbnail   text,
    i_image       text,
    i_srp         numeric(17, 2) NOT NULL,
    i_cost        numeric(17, 2) NOT NULL,
    i_avail       date    NOT NULL,
    i_stock       integer NOT NULL,
    i_isbn        text    NOT NULL,
    i_page        integer NOT NULL,
    i_backing     text    NOT NULL,
    i_dimensions  text
);

CREATE TABLE customer (
    c_id          integer NOT NULL,
    c_uname       text    NOT NULL,
    c_passwd      text    NOT NULL,
    c_fname       text    NOT NULL,
    c_lname       text    NOT NULL,
    c_addr_id     integer NOT NULL,
    c_phone       text    NOT NULL,
    c_email       text    NOT NULL,
    c_since       date    NOT NULL,
    c_last_login  date    NOT NULL,
    c_login       timestamp NOT NULL,
    c_expiration  timestamp NOT NULL,
    c_discount    numeric(5, 2) NOT NULL,
    c_balance     numeric(17, 2) NOT NULL,
    c_ytd_pmt     numeric(17, 2) NOT NULL,
    c_birthdate   date    NOT NULL,
    c_data        text
);

CREATE TABLE address (
    addr_id       integer NOT NULL,
    addr_street1  text    NOT NULL,
    addr_street2  text,
    addr_city     text    NOT NULL,
    addr_state    text    NOT NULL,
    addr_zip      text    NOT NULL,
    addr_co_id    integer NOT NULL
);

CREATE TABLE orders (
    o_id            integer NOT NULL,
    o_c_id          integer NOT NULL,
    o_date          timestamp NOT NULL,
    o_sub_total     numeric(17, 2) NOT NULL,
    o_tax           numeric(17, 2) NOT NULL,
    o_total         numeric(17, 2) NOT NULL,
    o_ship_type     text    NOT NULL,
    o_ship_date     timestamp NOT NULL,
    o_bill_addr_id  integer NOT NULL,
    o_ship_addr_id  integer NOT NULL,
    o_status        text    NOT NULL
);

CREATE TABLE order_line (
    ol_id        integer NOT NULL,
    ol_o_id      integer NOT NULL,
    ol_i_id      integer NOT NULL,
    ol_qty       integer NOT NULL,
    ol_discount  numeric(5, 2) NOT NULL,
    ol_comments  text
);

CREATE TABLE cc_xacts (
    cx_o_id       integer NOT NULL,
    cx_type       text    NOT NULL,
    cx_num        text    NOT NULL,
    cx_name       text    NOT NULL,
    cx_expire     date    NOT NULL,
    cx_auth_id    text    NOT NULL,
    cx_xact_amt   numeric(17, 2) NOT NULL,
    cx_xact_date  timestamp NOT NULL,
    cx_co_id      integer NOT NULL
);

-- TPC-W leaves the shopping cart's layout to the implementation: one row per cart (its
-- customer once known, and the time of its last change) and one row per item in it.
CREATE TABLE shopping_cart (
    sc_id    integer   NOT NULL,
    sc_c_id  integer,
    sc_time  timestamp NOT NULL
);

CREATE TABLE shopping_cart_line (
    scl_sc_id  integer NOT NULL,
    scl_i_id   integer NOT NULL,
    scl_qty    integer NOT NULL
);

-- New ids handed out by the interactions. bookstore_load() moves each one past the rows
-- it loads, so that new customers, addresses and orders never collide with loaded ones.
CREATE SEQUENCE customer_c_id_seq;
CREATE SEQUENCE address_addr_id_seq;
CREATE SEQUENCE orders_o_id_seq;
