-- Bookstore workload (TPC-W-like, after DBT-1): one PL/pgSQL function per web interaction.
--
-- Run after keys.sql. Uses the helpers of load.sql (bookstore_word, bookstore_subject,
-- bookstore_author_lname, bookstore_digsyl, bookstore_astring, bookstore_nstring), which
-- must stay defined. Each function returns a small set, and each pgbench script counts it.
--
-- The pgbench scripts pass numbers only: a subject is 1..24 (bookstore_subject), a title
-- word 1..100 (bookstore_word), an author 1..items / 4 (bookstore_author_lname), and a
-- customer logs in with user name DigSyl(c_id) and password its lower case.
--
-- Concurrency (READ COMMITTED, no errors allowed): new ids come from sequences, each
-- pgbench client has its own shopping cart (cart_id = client_id + 1), carts and their
-- lines are written with upserts, and the only transaction that locks several existing
-- rows (buy confirm, items) locks them in i_id order, so there are no deadlocks.
--
-- Output column names never equal a table column (those all have a table prefix), so
-- they do not clash with the columns inside the PL/pgSQL queries.

-- Home: greet the customer by name and show the promotional items, that is the five
-- items related to a random item (TPC-W's promotional processing).
CREATE OR REPLACE FUNCTION bookstore_home(p_c_id integer, p_promo_i_id integer)
RETURNS TABLE (first_name text, last_name text, item_id integer, thumbnail text)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    SELECT c.c_fname, c.c_lname, p.i_id, p.i_thumbnail
    FROM item AS r
    JOIN item AS p ON p.i_id IN (r.i_related1, r.i_related2, r.i_related3, r.i_related4, r.i_related5)
    LEFT JOIN customer AS c ON c.c_id = p_c_id
    WHERE r.i_id = p_promo_i_id;
END;
$$;

-- New Products: the 50 newest items of a subject, newest first, then by title.
CREATE OR REPLACE FUNCTION bookstore_new_products(p_subject integer)
RETURNS TABLE (item_id integer, title text, pub_date date, author_first text, author_last text)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    SELECT i_id, i_title, i_pub_date, a_fname, a_lname
    FROM item JOIN author ON a_id = i_a_id
    WHERE i_subject = bookstore_subject(p_subject)
    ORDER BY i_pub_date DESC, i_title
    LIMIT 50;
END;
$$;

-- Best Sellers: the 50 items of a subject with the most copies sold in the 3333 most
-- recent orders. Recent means highest o_id: the loader dates orders in o_id order and
-- new orders take the next id of a sequence.
CREATE OR REPLACE FUNCTION bookstore_best_sellers(p_subject integer)
RETURNS TABLE (item_id integer, title text, author_first text, author_last text, sold bigint)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    SELECT i_id, i_title, a_fname, a_lname, sum(ol_qty)
    FROM (SELECT o_id FROM orders ORDER BY o_id DESC LIMIT 3333) AS recent
    JOIN order_line ON ol_o_id = recent.o_id
    JOIN item ON i_id = ol_i_id
    JOIN author ON a_id = i_a_id
    WHERE i_subject = bookstore_subject(p_subject)
    GROUP BY i_id, i_title, a_fname, a_lname
    ORDER BY sum(ol_qty) DESC, i_id
    LIMIT 50;
END;
$$;

-- Product Detail: one item and its author.
CREATE OR REPLACE FUNCTION bookstore_product_detail(p_i_id integer)
RETURNS TABLE (item_id integer, title text, author_first text, author_last text,
               pub_date date, publisher text, subject text, description text, image text,
               cost numeric, srp numeric, avail date, isbn text, pages integer,
               backing text, dimensions text)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    SELECT i_id, i_title, a_fname, a_lname, i_pub_date, i_publisher, i_subject, i_desc,
           i_image, i_cost, i_srp, i_avail, i_isbn, i_page, i_backing, i_dimensions
    FROM item JOIN author ON a_id = i_a_id
    WHERE i_id = p_i_id;
END;
$$;

-- Search Request + Search Results: up to 50 items in title order, by
--   p_kind 1: titles containing word p_n (1..100),
--   p_kind 2: items of the authors with the last name of author p_n (1..items / 4),
--   p_kind 3: items of subject p_n (1..24).
CREATE OR REPLACE FUNCTION bookstore_search(p_kind integer, p_n integer)
RETURNS TABLE (item_id integer, title text, author_first text, author_last text)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF p_kind = 1 THEN
        RETURN QUERY
        SELECT i_id, i_title, a_fname, a_lname
        FROM item JOIN author ON a_id = i_a_id
        WHERE to_tsvector('simple', i_title) @@ to_tsquery('simple', bookstore_word(p_n))
        ORDER BY i_title
        LIMIT 50;
    ELSIF p_kind = 2 THEN
        RETURN QUERY
        SELECT i_id, i_title, a_fname, a_lname
        FROM author JOIN item ON i_a_id = a_id
        WHERE a_lname = bookstore_author_lname(p_n)
        ORDER BY i_title
        LIMIT 50;
    ELSIF p_kind = 3 THEN
        RETURN QUERY
        SELECT i_id, i_title, a_fname, a_lname
        FROM item JOIN author ON a_id = i_a_id
        WHERE i_subject = bookstore_subject(p_n)
        ORDER BY i_title
        LIMIT 50;
    ELSE
        RAISE EXCEPTION 'bookstore_search: unknown search kind %', p_kind;
    END IF;
END;
$$;

-- Shopping Cart: create the cart if needed, put p_qty copies of item p_i_id in it (an
-- item already in the cart gets the new quantity), and return the cart's lines.
CREATE OR REPLACE FUNCTION bookstore_shopping_cart(p_cart_id integer, p_i_id integer, p_qty integer)
RETURNS TABLE (item_id integer, title text, cost numeric, srp numeric, backing text, qty integer)
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO shopping_cart (sc_id, sc_time) VALUES (p_cart_id, now())
    ON CONFLICT (sc_id) DO UPDATE SET sc_time = excluded.sc_time;

    INSERT INTO shopping_cart_line (scl_sc_id, scl_i_id, scl_qty) VALUES (p_cart_id, p_i_id, p_qty)
    ON CONFLICT (scl_sc_id, scl_i_id) DO UPDATE SET scl_qty = excluded.scl_qty;

    RETURN QUERY
    SELECT i_id, i_title, i_cost, i_srp, i_backing, scl_qty
    FROM shopping_cart_line JOIN item ON i_id = scl_i_id
    WHERE scl_sc_id = p_cart_id
    ORDER BY i_id;
END;
$$;

-- Customer Registration: a returning customer (p_roll > 20) reads the customer's data
-- and address. With p_roll 1..20 (20% of calls when the script draws it from 1..100) a
-- new customer registers instead: a new address and a new customer row, with the same
-- rules as the loader, and the new customer is returned.
CREATE OR REPLACE FUNCTION bookstore_customer_registration(p_c_id integer, p_roll integer)
RETURNS TABLE (customer_id integer, uname text, first_name text, last_name text,
               email text, discount numeric, street1 text, city text, country_name text)
LANGUAGE plpgsql AS $$
DECLARE
    v_c_id    integer := p_c_id;
    v_addr_id integer;
BEGIN
    IF p_roll <= 20 THEN
        v_c_id := nextval('customer_c_id_seq');
        v_addr_id := nextval('address_addr_id_seq');

        INSERT INTO address (addr_id, addr_street1, addr_street2, addr_city, addr_state, addr_zip, addr_co_id)
        VALUES (v_addr_id, bookstore_astring(15, 40), bookstore_astring(15, 40),
                initcap(bookstore_astring(4, 30)), upper(bookstore_astring(2, 20)),
                bookstore_astring(5, 10), 1 + floor(random() * 92)::integer);

        INSERT INTO customer (c_id, c_uname, c_passwd, c_fname, c_lname, c_addr_id, c_phone, c_email,
                              c_since, c_last_login, c_login, c_expiration, c_discount, c_balance,
                              c_ytd_pmt, c_birthdate, c_data)
        VALUES (v_c_id, bookstore_digsyl(v_c_id, 0), lower(bookstore_digsyl(v_c_id, 0)),
                initcap(bookstore_astring(8, 15)), initcap(bookstore_astring(8, 15)), v_addr_id,
                bookstore_nstring(9, 16),
                bookstore_digsyl(v_c_id, 0) || '@' || bookstore_astring(2, 9) || '.com',
                current_date, current_date, now(), now() + interval '2 hours',
                round((random() * 0.5)::numeric, 2), 0, 0,
                date '1880-01-01' + floor(random() * (current_date - date '1880-01-01'))::integer,
                bookstore_astring(100, 500));
    END IF;

    RETURN QUERY
    SELECT c_id, c_uname, c_fname, c_lname, c_email, c_discount, addr_street1, addr_city, co_name
    FROM customer
    JOIN address ON addr_id = c_addr_id
    JOIN country ON co_id = addr_co_id
    WHERE c_id = v_c_id;
END;
$$;

-- Buy Request: the returning customer logs in with user name and password (TPC-W: the
-- login time is refreshed and the session expires 2 hours later), the cart is assigned
-- to the customer, and the cart's lines are returned with the order totals: subtotal
-- after the customer's discount, 8.25% tax, shipping 3.00 plus 1.00 per book.
CREATE OR REPLACE FUNCTION bookstore_buy_request(p_c_id integer, p_cart_id integer)
RETURNS TABLE (item_id integer, title text, cost numeric, qty integer,
               sub_total numeric, tax numeric, ship_cost numeric, total numeric)
LANGUAGE plpgsql AS $$
DECLARE
    v_uname    text := bookstore_digsyl(p_c_id, 0);
    v_c_id     integer;
    v_discount numeric;
    v_sub      numeric;
    v_books    bigint;
BEGIN
    UPDATE customer SET c_login = now(), c_expiration = now() + interval '2 hours'
    WHERE c_uname = v_uname AND c_passwd = lower(v_uname)
    RETURNING c_id, c_discount INTO v_c_id, v_discount;

    INSERT INTO shopping_cart (sc_id, sc_c_id, sc_time) VALUES (p_cart_id, v_c_id, now())
    ON CONFLICT (sc_id) DO UPDATE SET sc_c_id = excluded.sc_c_id, sc_time = excluded.sc_time;

    SELECT round(coalesce(sum(i_cost * scl_qty), 0) * (1 - v_discount), 2), coalesce(sum(scl_qty), 0)
    INTO v_sub, v_books
    FROM shopping_cart_line JOIN item ON i_id = scl_i_id
    WHERE scl_sc_id = p_cart_id;

    RETURN QUERY
    SELECT i_id, i_title, i_cost, scl_qty, v_sub, round(v_sub * 0.0825, 2), 3.00 + v_books,
           v_sub + round(v_sub * 0.0825, 2) + 3.00 + v_books
    FROM shopping_cart_line JOIN item ON i_id = scl_i_id
    WHERE scl_sc_id = p_cart_id
    ORDER BY i_id;
END;
$$;

-- Buy Confirm: turn the cart into an order. An empty cart first gets one copy of item
-- p_fill_i_id, so that the order is never empty. The order gets one line per cart line
-- and a credit card transaction, the stock of each item goes down by the quantity
-- ordered (TPC-W: if that leaves fewer than 10, the item is restocked with 21 more), and
-- the cart is emptied. Returns the new order's lines.
CREATE OR REPLACE FUNCTION bookstore_buy_confirm(p_c_id integer, p_cart_id integer, p_fill_i_id integer)
RETURNS TABLE (order_id integer, line_id integer, item_id integer, qty integer, total numeric)
LANGUAGE plpgsql AS $$
DECLARE
    v_o_id     integer;
    v_fname    text;
    v_lname    text;
    v_discount numeric;
    v_addr_id  integer;
    v_co_id    integer;
    v_sub      numeric;
    v_tax      numeric;
    v_total    numeric;
    v_books    bigint;
BEGIN
    INSERT INTO shopping_cart (sc_id, sc_c_id, sc_time) VALUES (p_cart_id, p_c_id, now())
    ON CONFLICT (sc_id) DO UPDATE SET sc_c_id = excluded.sc_c_id, sc_time = excluded.sc_time;

    INSERT INTO shopping_cart_line (scl_sc_id, scl_i_id, scl_qty)
    SELECT p_cart_id, p_fill_i_id, 1
    WHERE NOT EXISTS (SELECT 1 FROM shopping_cart_line WHERE scl_sc_id = p_cart_id);

    SELECT c_fname, c_lname, c_discount, c_addr_id, addr_co_id
    INTO v_fname, v_lname, v_discount, v_addr_id, v_co_id
    FROM customer JOIN address ON addr_id = c_addr_id
    WHERE c_id = p_c_id;

    -- Lock the items of the order in i_id order before changing their stock: two buyers
    -- of the same items then queue up instead of deadlocking.
    PERFORM 1 FROM item
    WHERE i_id IN (SELECT scl_i_id FROM shopping_cart_line WHERE scl_sc_id = p_cart_id)
    ORDER BY i_id
    FOR UPDATE;

    SELECT round(sum(i_cost * scl_qty) * (1 - v_discount), 2), sum(scl_qty)
    INTO v_sub, v_books
    FROM shopping_cart_line JOIN item ON i_id = scl_i_id
    WHERE scl_sc_id = p_cart_id;
    v_tax := round(v_sub * 0.0825, 2);
    v_total := v_sub + v_tax + 3.00 + v_books;
    v_o_id := nextval('orders_o_id_seq');

    -- TPC-W ships to the customer's address unless another one is entered: we always use
    -- the customer's address, for billing too. Shipping takes 1 to 7 days.
    INSERT INTO orders (o_id, o_c_id, o_date, o_sub_total, o_tax, o_total, o_ship_type,
                        o_ship_date, o_bill_addr_id, o_ship_addr_id, o_status)
    VALUES (v_o_id, p_c_id, now(), v_sub, v_tax, v_total,
            (ARRAY['AIR', 'UPS', 'FEDEX', 'SHIP', 'COURIER', 'MAIL'])[1 + floor(random() * 6)::integer],
            now() + (1 + floor(random() * 7)::integer) * interval '1 day',
            v_addr_id, v_addr_id, 'PENDING');

    INSERT INTO order_line (ol_id, ol_o_id, ol_i_id, ol_qty, ol_discount, ol_comments)
    SELECT row_number() OVER (ORDER BY scl_i_id), v_o_id, scl_i_id, scl_qty, v_discount,
           bookstore_astring(20, 100)
    FROM shopping_cart_line
    WHERE scl_sc_id = p_cart_id;

    UPDATE item
    SET i_stock = CASE WHEN i_stock - scl_qty < 10 THEN i_stock - scl_qty + 21
                       ELSE i_stock - scl_qty END
    FROM shopping_cart_line
    WHERE scl_sc_id = p_cart_id AND i_id = scl_i_id;

    INSERT INTO cc_xacts (cx_o_id, cx_type, cx_num, cx_name, cx_expire, cx_auth_id,
                          cx_xact_amt, cx_xact_date, cx_co_id)
    VALUES (v_o_id,
            (ARRAY['VISA', 'MASTERCARD', 'DISCOVER', 'AMEX', 'DINERS'])[1 + floor(random() * 5)::integer],
            bookstore_nstring(16, 16), v_fname || ' ' || v_lname,
            current_date + 10 + floor(random() * 721)::integer,
            upper(bookstore_astring(15, 15)), v_total, now(), v_co_id);

    DELETE FROM shopping_cart_line WHERE scl_sc_id = p_cart_id;

    RETURN QUERY
    SELECT ol_o_id, ol_id, ol_i_id, ol_qty, v_total
    FROM order_line
    WHERE ol_o_id = v_o_id
    ORDER BY ol_id;
END;
$$;

-- Order Inquiry: the page only asks for the password of the returning customer, shown
-- with the customer's user name.
CREATE OR REPLACE FUNCTION bookstore_order_inquiry(p_c_id integer)
RETURNS TABLE (uname text)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    SELECT c_uname FROM customer WHERE c_id = p_c_id;
END;
$$;

-- Order Display: the customer logs in with user name and password, and sees the most
-- recent order (highest o_id, see best sellers) with its payment, shipping address and
-- lines. A customer without orders gets no rows.
CREATE OR REPLACE FUNCTION bookstore_order_display(p_c_id integer)
RETURNS TABLE (order_id integer, order_date timestamp, status text, total numeric,
               card_type text, ship_city text, line_id integer, item_id integer,
               title text, publisher text, cost numeric, qty integer, discount numeric,
               comments text)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_uname text := bookstore_digsyl(p_c_id, 0);
    v_o_id  integer;
BEGIN
    SELECT o_id INTO v_o_id
    FROM customer JOIN orders ON o_c_id = c_id
    WHERE c_uname = v_uname AND c_passwd = lower(v_uname)
    ORDER BY o_id DESC
    LIMIT 1;

    RETURN QUERY
    SELECT o_id, o_date, o_status, o_total, cx_type, addr_city, ol_id, ol_i_id,
           i_title, i_publisher, i_cost, ol_qty, ol_discount, ol_comments
    FROM orders
    JOIN cc_xacts ON cx_o_id = o_id
    JOIN address ON addr_id = o_ship_addr_id
    JOIN order_line ON ol_o_id = o_id
    JOIN item ON i_id = ol_i_id
    WHERE o_id = v_o_id
    ORDER BY ol_id;
END;
$$;
