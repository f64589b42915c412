-- Bookstore workload (TPC-W-like, after DBT-1): data generation.
--
-- Function definitions only. Run once after schema.sql, then call
--     SELECT bookstore_load(items, customers);
-- on the empty tables, then run keys.sql. The small helpers below turn numbers into
-- the words, last names, subjects and random strings of the data. procs.sql uses the same
-- helpers, so that what the interactions search for is what the loader wrote.

-- DigSyl (TPC-W's population rules): each decimal digit of n becomes a syllable. With width > 0
-- the number is first padded with leading zeros to that many digits.
CREATE OR REPLACE FUNCTION bookstore_digsyl(n bigint, width integer) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT replace(replace(replace(replace(replace(
           replace(replace(replace(replace(replace(
               lpad(n::text, greatest(width, length(n::text)), '0'),
               '0', 'BA'), '1', 'OG'), '2', 'AL'), '3', 'RI'), '4', 'RE'),
               '5', 'SE'), '6', 'AT'), '7', 'UL'), '8', 'IN'), '9', 'NG')
$$;

-- Word n (1..100, larger n wraps around) of the fixed list that item titles are built
-- from. The title search of bookstore_search() looks for one of these words.
CREATE OR REPLACE FUNCTION bookstore_word(n integer) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT (ARRAY[
        'amber', 'ancient', 'angel', 'apple', 'autumn', 'bell', 'bird', 'black', 'blue', 'bridge',
        'broken', 'candle', 'castle', 'cedar', 'city', 'clock', 'cloud', 'copper', 'crown', 'crystal',
        'dark', 'dawn', 'deep', 'desert', 'diamond', 'dragon', 'dream', 'eagle', 'echo', 'empire',
        'falcon', 'feather', 'fire', 'forest', 'fox', 'frost', 'garden', 'ghost', 'glass', 'gold',
        'green', 'harbor', 'heart', 'hidden', 'hollow', 'honey', 'horse', 'hunter', 'ice', 'iron',
        'island', 'ivory', 'jade', 'king', 'lake', 'lantern', 'leaf', 'light', 'lion', 'lost',
        'marble', 'midnight', 'mirror', 'moon', 'mountain', 'night', 'north', 'ocean', 'orchard', 'pearl',
        'queen', 'rain', 'raven', 'red', 'river', 'rose', 'sea', 'secret', 'shadow', 'silent',
        'silver', 'sky', 'snow', 'south', 'star', 'stone', 'storm', 'summer', 'sun', 'thunder',
        'tower', 'valley', 'velvet', 'west', 'white', 'wild', 'willow', 'wind', 'winter', 'wolf'
    ])[1 + (n - 1) % 100]
$$;

-- Subject n (1..24, larger n wraps around): the 24 subjects of TPC-W's item table.
CREATE OR REPLACE FUNCTION bookstore_subject(n integer) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT (ARRAY[
        'ARTS', 'BIOGRAPHIES', 'BUSINESS', 'CHILDREN', 'COMPUTERS', 'COOKING',
        'HEALTH', 'HISTORY', 'HOME', 'HUMOR', 'LITERATURE', 'MYSTERY',
        'NON-FICTION', 'PARENTING', 'POLITICS', 'REFERENCE', 'RELIGION', 'ROMANCE',
        'SELF-HELP', 'SCIENCE-NATURE', 'SCIENCE-FICTION', 'SPORTS', 'YOUTH', 'TRAVEL'
    ])[1 + (n - 1) % 24]
$$;

-- Last name of author a_id: the three-digit DigSyl of (a_id - 1) mod 1000, so that up to
-- 1000 authors have distinct names and beyond that each name is shared by a few authors.
-- The author search of bookstore_search() looks for the last name of a random author.
CREATE OR REPLACE FUNCTION bookstore_author_lname(a_id integer) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT bookstore_digsyl((a_id - 1) % 1000, 3)
$$;

-- Random string of letters (a..p), length uniform in [min_len, max_len], at most 512:
-- TPC-W's "a-string", cheap enough to generate a few hundred thousand of.
CREATE OR REPLACE FUNCTION bookstore_astring(min_len integer, max_len integer) RETURNS text
LANGUAGE sql VOLATILE AS $$
    SELECT left(repeat(translate(md5(random()::text), '0123456789', 'ghijklmnop'), 16),
                min_len + floor(random() * (max_len - min_len + 1))::integer)
$$;

-- Random string of digits, length uniform in [min_len, max_len], at most 32: TPC-W's
-- "n-string" (phone and credit card numbers).
CREATE OR REPLACE FUNCTION bookstore_nstring(min_len integer, max_len integer) RETURNS text
LANGUAGE sql VOLATILE AS $$
    SELECT left(translate(md5(random()::text), 'abcdef', '012345'),
                min_len + floor(random() * (max_len - min_len + 1))::integer)
$$;

-- Fill all tables for `items` items and `customers` customers, set-based, with the
-- cardinalities of TPC-W's database population: 92 countries, items / 4 authors, 2 addresses per
-- customer, 0.9 orders per customer with 1 to 5 lines and one credit card transaction
-- each. Shopping carts start empty. Needs at least 6 items (for the related items).
CREATE OR REPLACE FUNCTION bookstore_load(items integer, customers integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    n_authors   integer := items / 4;
    n_addresses integer := 2 * customers;
    n_orders    integer := customers * 9 / 10;
BEGIN
    -- Exchange rates are placeholders: no interaction converts currencies.
    INSERT INTO country (co_id, co_name, co_exchange, co_currency)
    SELECT id, name, 1.0, currency
    FROM (VALUES
        (1, 'United States', 'Dollar'), (2, 'United Kingdom', 'Pound'), (3, 'Canada', 'Dollar'),
        (4, 'Germany', 'Euro'), (5, 'France', 'Euro'), (6, 'Japan', 'Yen'),
        (7, 'Netherlands', 'Euro'), (8, 'Italy', 'Euro'), (9, 'Switzerland', 'Franc'),
        (10, 'Australia', 'Dollar'), (11, 'Algeria', 'Dinar'), (12, 'Argentina', 'Peso'),
        (13, 'Armenia', 'Dram'), (14, 'Austria', 'Euro'), (15, 'Azerbaijan', 'Manat'),
        (16, 'Bahamas', 'Dollar'), (17, 'Bahrain', 'Dinar'), (18, 'Bangladesh', 'Taka'),
        (19, 'Barbados', 'Dollar'), (20, 'Belarus', 'Ruble'), (21, 'Belgium', 'Euro'),
        (22, 'Bermuda', 'Dollar'), (23, 'Bolivia', 'Boliviano'), (24, 'Botswana', 'Pula'),
        (25, 'Brazil', 'Real'), (26, 'Bulgaria', 'Lev'), (27, 'Cayman Islands', 'Dollar'),
        (28, 'Chad', 'Franc'), (29, 'Chile', 'Peso'), (30, 'China', 'Yuan'),
        (31, 'Vietnam', 'Dong'), (32, 'Colombia', 'Peso'), (33, 'Croatia', 'Euro'),
        (34, 'Cuba', 'Peso'), (35, 'Cyprus', 'Euro'), (36, 'Czech Republic', 'Koruna'),
        (37, 'Denmark', 'Krone'), (38, 'Dominican Republic', 'Peso'), (39, 'Kenya', 'Shilling'),
        (40, 'Ecuador', 'Dollar'), (41, 'Egypt', 'Pound'), (42, 'El Salvador', 'Dollar'),
        (43, 'Estonia', 'Euro'), (44, 'Ethiopia', 'Birr'), (45, 'Falkland Islands', 'Pound'),
        (46, 'Faroe Islands', 'Krone'), (47, 'Fiji', 'Dollar'), (48, 'Finland', 'Euro'),
        (49, 'Gabon', 'Franc'), (50, 'Gibraltar', 'Pound'), (51, 'Greece', 'Euro'),
        (52, 'Guam', 'Dollar'), (53, 'Hong Kong', 'Dollar'), (54, 'Hungary', 'Forint'),
        (55, 'Iceland', 'Krona'), (56, 'India', 'Rupee'), (57, 'Indonesia', 'Rupiah'),
        (58, 'Iran', 'Rial'), (59, 'Iraq', 'Dinar'), (60, 'Ireland', 'Euro'),
        (61, 'Israel', 'Shekel'), (62, 'Jamaica', 'Dollar'), (63, 'Jordan', 'Dinar'),
        (64, 'Kazakhstan', 'Tenge'), (65, 'Kuwait', 'Dinar'), (66, 'Lebanon', 'Pound'),
        (67, 'Luxembourg', 'Euro'), (68, 'Malaysia', 'Ringgit'), (69, 'Mexico', 'Peso'),
        (70, 'Mauritius', 'Rupee'), (71, 'New Zealand', 'Dollar'), (72, 'Norway', 'Krone'),
        (73, 'Pakistan', 'Rupee'), (74, 'Philippines', 'Peso'), (75, 'Poland', 'Zloty'),
        (76, 'Portugal', 'Euro'), (77, 'Romania', 'Leu'), (78, 'Russia', 'Ruble'),
        (79, 'Saudi Arabia', 'Riyal'), (80, 'Singapore', 'Dollar'), (81, 'Slovakia', 'Euro'),
        (82, 'South Africa', 'Rand'), (83, 'South Korea', 'Won'), (84, 'Spain', 'Euro'),
        (85, 'Sudan', 'Pound'), (86, 'Sweden', 'Krona'), (87, 'Taiwan', 'Dollar'),
        (88, 'Thailand', 'Baht'), (89, 'Trinidad and Tobago', 'Dollar'), (90, 'Turkey', 'Lira'),
        (91, 'Venezuela', 'Bolivar'), (92, 'Zambia', 'Kwacha')
    ) AS c (id, name, currency);

    INSERT INTO author (a_id, a_fname, a_lname, a_mname, a_dob, a_bio)
    SELECT a,
           initcap(bookstore_astring(3, 20)),
           bookstore_author_lname(a),
           initcap(bookstore_astring(1, 20)),
           date '1800-01-01' + floor(random() * (date '1990-01-01' - date '1800-01-01'))::integer,
           bookstore_astring(125, 500)
    FROM generate_series(1, n_authors) AS a;

    -- Titles are 3 to 5 words of the bookstore_word() list. The first items / 4 items
    -- have author i_id, so that every author has a book (as TPC-W populates it). The five
    -- related items are consecutive ids starting a random distance (1..items - 5) after
    -- i_id, wrapping around: five distinct items other than the item itself.
    WITH r AS (
        SELECT i,
               1 + floor(random() * 100)::integer AS w1,
               1 + floor(random() * 100)::integer AS w2,
               1 + floor(random() * 100)::integer AS w3,
               1 + floor(random() * 100)::integer AS w4,
               1 + floor(random() * 100)::integer AS w5,
               3 + floor(random() * 3)::integer AS n_words,
               1 + floor(random() * (items - 5))::integer AS related_from,
               date '1930-01-01' + floor(random() * (current_date - date '1930-01-01'))::integer AS pub_date,
               round((1 + random() * 9998.99)::numeric, 2) AS srp
        FROM generate_series(1, items) AS i
    )
    INSERT INTO item (i_id, i_title, i_a_id, i_pub_date, i_publisher, i_subject, i_desc,
                      i_related1, i_related2, i_related3, i_related4, i_related5,
                      i_thumbnail, i_image, i_srp, i_cost, i_avail, i_stock, i_isbn,
                      i_page, i_backing, i_dimensions)
    SELECT i,
           initcap(concat_ws(' ', bookstore_word(w1), bookstore_word(w2), bookstore_word(w3),
                             CASE WHEN n_words >= 4 THEN bookstore_word(w4) END,
                             CASE WHEN n_words >= 5 THEN bookstore_word(w5) END)),
           CASE WHEN i <= n_authors THEN i ELSE 1 + floor(random() * n_authors)::integer END,
           pub_date,
           initcap(bookstore_astring(14, 60)),
           bookstore_subject(1 + floor(random() * 24)::integer),
           bookstore_astring(100, 500),
           1 + (i - 1 + related_from) % items,
           1 + (i + related_from) % items,
           1 + (i + 1 + related_from) % items,
           1 + (i + 2 + related_from) % items,
           1 + (i + 3 + related_from) % items,
           format('img%s/thumb_%s.gif', i % 100, i),
           format('img%s/image_%s.gif', i % 100, i),
           srp,
           round(srp * (1 - random()::numeric * 0.5), 2),
           pub_date + 1 + floor(random() * 30)::integer,
           10 + floor(random() * 21)::integer,
           upper(bookstore_astring(13, 13)),
           20 + floor(random() * 9980)::integer,
           (ARRAY['HARDBACK', 'PAPERBACK', 'USED', 'AUDIO', 'LIMITED-EDITION'])[1 + floor(random() * 5)::integer],
           format('%s x %s x %s', round((0.01 + random() * 99.98)::numeric, 2),
                  round((0.01 + random() * 99.98)::numeric, 2), round((0.01 + random() * 99.98)::numeric, 2))
    FROM r;

    INSERT INTO address (addr_id, addr_street1, addr_street2, addr_city, addr_state, addr_zip, addr_co_id)
    SELECT a,
           bookstore_astring(15, 40),
           bookstore_astring(15, 40),
           initcap(bookstore_astring(4, 30)),
           upper(bookstore_astring(2, 20)),
           bookstore_astring(5, 10),
           1 + floor(random() * 92)::integer
    FROM generate_series(1, n_addresses) AS a;

    -- User name DigSyl(c_id) and password its lower case (as TPC-W populates them): the
    -- interactions log a customer in by these.
    WITH r AS (
        SELECT c, current_date - 1 - floor(random() * 730)::integer AS since
        FROM generate_series(1, customers) AS c
    )
    INSERT INTO customer (c_id, c_uname, c_passwd, c_fname, c_lname, c_addr_id, c_phone, c_email,
                          c_since, c_last_login, c_login, c_expiration, c_discount, c_balance,
                          c_ytd_pmt, c_birthdate, c_data)
    SELECT c,
           bookstore_digsyl(c, 0),
           lower(bookstore_digsyl(c, 0)),
           initcap(bookstore_astring(8, 15)),
           initcap(bookstore_astring(8, 15)),
           1 + floor(random() * n_addresses)::integer,
           bookstore_nstring(9, 16),
           bookstore_digsyl(c, 0) || '@' || bookstore_astring(2, 9) || '.com',
           since,
           since + floor(random() * 61)::integer,
           now(),
           now() + interval '2 hours',
           round((random() * 0.5)::numeric, 2),
           0,
           round((random() * 999.99)::numeric, 2),
           date '1880-01-01' + floor(random() * (current_date - date '1880-01-01'))::integer,
           bookstore_astring(100, 500)
    FROM r;

    WITH per_order AS (
        SELECT ord, 1 + floor(random() * 5)::integer AS n_lines
        FROM generate_series(1, n_orders) AS ord
    )
    INSERT INTO order_line (ol_id, ol_o_id, ol_i_id, ol_qty, ol_discount, ol_comments)
    SELECT l,
           ord,
           1 + floor(random() * items)::integer,
           1 + floor(random() * 5)::integer,
           round((random() * 0.03)::numeric, 2),
           bookstore_astring(20, 100)
    FROM per_order CROSS JOIN LATERAL generate_series(1, n_lines) AS l;

    -- Order dates cover the last 60 days in o_id order, so that the most recent orders
    -- are the ones with the highest ids, like the orders the interactions add. Totals
    -- follow from the lines: 8.25% tax, shipping 3.00 plus 1.00 per book.
    WITH t AS (
        SELECT ol_o_id AS ord,
               round(sum(ol_qty * i_cost * (1 - ol_discount)), 2) AS sub_total,
               sum(ol_qty) AS books,
               now() - (n_orders - ol_o_id) * interval '60 days' / n_orders AS o_date
        FROM order_line JOIN item ON i_id = ol_i_id
        GROUP BY ol_o_id
    )
    INSERT INTO orders (o_id, o_c_id, o_date, o_sub_total, o_tax, o_total, o_ship_type,
                        o_ship_date, o_bill_addr_id, o_ship_addr_id, o_status)
    SELECT ord,
           1 + floor(random() * customers)::integer,
           o_date,
           sub_total,
           round(sub_total * 0.0825, 2),
           sub_total + round(sub_total * 0.0825, 2) + 3.00 + books,
           (ARRAY['AIR', 'UPS', 'FEDEX', 'SHIP', 'COURIER', 'MAIL'])[1 + floor(random() * 6)::integer],
           o_date + floor(random() * 8)::integer * interval '1 day',
           1 + floor(random() * n_addresses)::integer,
           1 + floor(random() * n_addresses)::integer,
           (ARRAY['PROCESSING', 'SHIPPED', 'PENDING', 'DENIED'])[1 + floor(random() * 4)::integer]
    FROM t;

    INSERT INTO cc_xacts (cx_o_id, cx_type, cx_num, cx_name, cx_expire, cx_auth_id,
                          cx_xact_amt, cx_xact_date, cx_co_id)
    SELECT o_id,
           (ARRAY['VISA', 'MASTERCARD', 'DISCOVER', 'AMEX', 'DINERS'])[1 + floor(random() * 5)::integer],
           bookstore_nstring(16, 16),
           c_fname || ' ' || c_lname,
           o_date::date + 10 + floor(random() * 721)::integer,
           upper(bookstore_astring(15, 15)),
           o_total,
           o_date,
           1 + floor(random() * 92)::integer
    FROM orders JOIN customer ON c_id = o_c_id;

    PERFORM setval('customer_c_id_seq', customers);
    PERFORM setval('address_addr_id_seq', n_addresses);
    PERFORM setval('orders_o_id_seq', n_orders);
END;
$$;
