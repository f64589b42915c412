-- TPC-C-like workload: the five transactions as PL/pgSQL procedures (spec clauses 2.4-2.8).
--
-- Run after load.sql (they call tpcc_rand_int, tpcc_nurand and tpcc_last_name) and keys.sql.
-- The pgbench scripts CALL them outside a transaction block, one CALL per transaction,
-- at READ COMMITTED. Outputs that the spec only shows on the terminal are read but not
-- returned.
--
-- Locking, so that no transaction can deadlock or fail under concurrency:
--   * New-Order locks its district row, then the stock rows in (warehouse, item) order.
--   * Payment locks its customer, then the district, then the warehouse: the hottest row
--     last, so it is held for the shortest time. Every Payment takes exactly one row of
--     each kind in that order, and neither New-Order nor Delivery ever waits for a
--     warehouse or district row while holding a customer or stock row, so no cycle of
--     waits can form.
--   * Delivery goes through the districts in order 1..10 and takes, per district, its own
--     new_order row (SKIP LOCKED: a row locked by a concurrent Delivery is being delivered
--     by it), that order and its lines, and the order's customer.
--   * Order-Status and Stock-Level only read.
-- Parameters are prefixed p_ and local variables v_ so that they never clash with
-- column names.

-- The customer chosen by last name (clause 2.5.2.2): of the customers of the district with
-- the last name numbered p_c_last_num, sorted by C_FIRST, the one at position ceil(n / 2).
-- Every last name exists in every district (see tpcc_load_warehouse).
CREATE FUNCTION tpcc_customer_by_name(p_w_id int, p_d_id int, p_c_last_num int) RETURNS int
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_c_last varchar := tpcc_last_name(p_c_last_num);
    v_count  int;
    v_c_id   int;
BEGIN
    SELECT count(*) INTO v_count
    FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = v_c_last;

    SELECT c_id INTO v_c_id
    FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_last = v_c_last
    ORDER BY c_first
    OFFSET (v_count - 1) / 2 LIMIT 1;

    RETURN v_c_id;
END
$$;

-- New-Order (clause 2.4): p_ol_cnt lines generated here; p_rollback = 1 makes the last
-- item the unused number 100001 and the transaction roll back; p_warehouses is the
-- number of warehouses (remote supply only when > 1); p_ol_i_id_c is the C constant of
-- NURand(8191, 1, 100000) for the item numbers.
CREATE PROCEDURE tpcc_new_order(p_w_id int, p_d_id int, p_c_id int, p_ol_cnt int,
                                p_rollback int, p_warehouses int, p_ol_i_id_c int)
LANGUAGE plpgsql
AS $$
DECLARE
    v_item_ids   int[] := '{}';
    v_supply_ids int[] := '{}';
    v_quantities int[] := '{}';
    v_supply_id  int;
    v_all_local  int;
    v_w_tax      numeric;
    v_d_tax      numeric;
    v_o_id       int;
    v_c_discount numeric;
    v_c_last     varchar;
    v_c_credit   char(2);
    v_line       record;
    v_price      numeric;
    v_dist_info  char(24);
    v_total      numeric := 0;
    v_missing    boolean := false;
BEGIN
    -- The lines (clause 2.4.1.5): item NURand(8191, 1, 100000), quantity 1..10, supplied
    -- by the home warehouse except 1% by another warehouse chosen at random.
    FOR i IN 1 .. p_ol_cnt LOOP
        v_item_ids := v_item_ids || CASE WHEN p_rollback = 1 AND i = p_ol_cnt THEN 100001
                                         ELSE tpcc_nurand(8191, 1, 100000, p_ol_i_id_c) END;
        v_supply_id := p_w_id;
        IF p_warehouses > 1 AND random() < 0.01 THEN
            v_supply_id := tpcc_rand_int(1, p_warehouses - 1);
            IF v_supply_id >= p_w_id THEN
                v_supply_id := v_supply_id + 1;
            END IF;
        END IF;
        v_supply_ids := v_supply_ids || v_supply_id;
        v_quantities := v_quantities || tpcc_rand_int(1, 10);
    END LOOP;
    v_all_local := CASE WHEN v_supply_ids <@ ARRAY[p_w_id] THEN 1 ELSE 0 END;

    SELECT w_tax INTO v_w_tax FROM warehouse WHERE w_id = p_w_id;

    UPDATE district SET d_next_o_id = d_next_o_id + 1
    WHERE d_w_id = p_w_id AND d_id = p_d_id
    RETURNING d_tax, d_next_o_id - 1 INTO v_d_tax, v_o_id;

    SELECT c_discount, c_last, c_credit INTO v_c_discount, v_c_last, v_c_credit
    FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = p_c_id;

    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt,
                        o_all_local)
    VALUES (v_o_id, p_d_id, p_w_id, p_c_id, localtimestamp, NULL, p_ol_cnt, v_all_local);

    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d_id, p_w_id);

    -- The lines in the order of their stock rows, so that concurrent New-Orders lock stock
    -- rows in one global order and cannot deadlock. OL_NUMBER follows that order.
    FOR v_line IN
        SELECT l.item_id, l.supply_id, l.quantity,
               row_number() OVER (ORDER BY l.supply_id, l.item_id) AS ol_number
        FROM unnest(v_item_ids, v_supply_ids, v_quantities) AS l(item_id, supply_id, quantity)
        ORDER BY l.supply_id, l.item_id
    LOOP
        SELECT i_price INTO v_price FROM item WHERE i_id = v_line.item_id;
        IF NOT FOUND THEN
            -- The unused item number of a rollback order: the other lines are still
            -- processed, this one is skipped (clause 2.4.2.3).
            v_missing := true;
            CONTINUE;
        END IF;

        -- S_QUANTITY drops by the quantity ordered, and is refilled by 91 when fewer than
        -- 10 would remain (clause 2.4.2.2).
        UPDATE stock
        SET s_quantity = CASE WHEN s_quantity - v_line.quantity >= 10
                              THEN s_quantity - v_line.quantity
                              ELSE s_quantity - v_line.quantity + 91 END,
            s_ytd = s_ytd + v_line.quantity,
            s_order_cnt = s_order_cnt + 1,
            s_remote_cnt = s_remote_cnt + CASE WHEN v_line.supply_id <> p_w_id THEN 1 ELSE 0 END
        WHERE s_w_id = v_line.supply_id AND s_i_id = v_line.item_id
        RETURNING CASE p_d_id WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
                              WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06
                              WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09
                              ELSE s_dist_10 END
        INTO v_dist_info;

        INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
                                ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
        VALUES (v_o_id, p_d_id, p_w_id, v_line.ol_number, v_line.item_id, v_line.supply_id,
                NULL, v_line.quantity, v_line.quantity * v_price, v_dist_info);

        v_total := v_total + v_line.quantity * v_price;
    END LOOP;

    -- The order total with discount and taxes (clause 2.4.2.2).
    v_total := v_total * (1 - v_c_discount) * (1 + v_w_tax + v_d_tax);

    -- "Item number is not valid": the simulated data entry error undoes the whole order
    -- (clause 2.4.2.3). A procedure CALLed outside a transaction block may do this.
    IF v_missing THEN
        ROLLBACK;
    END IF;
END
$$;

-- Payment (clause 2.5): p_amount paid by customer (p_c_w_id, p_c_d_id) to district
-- (p_w_id, p_d_id); the customer is p_c_id, or when p_by_name = 1 the customer chosen by
-- the last name numbered p_c_last_num.
CREATE PROCEDURE tpcc_payment(p_w_id int, p_d_id int, p_c_w_id int, p_c_d_id int,
                              p_c_id int, p_by_name int, p_c_last_num int, p_amount numeric)
LANGUAGE plpgsql
AS $$
DECLARE
    v_c_id   int := p_c_id;
    v_d_name varchar;
    v_w_name varchar;
BEGIN
    IF p_by_name = 1 THEN
        v_c_id := tpcc_customer_by_name(p_c_w_id, p_c_d_id, p_c_last_num);
    END IF;

    -- For bad credit, the payment is also recorded at the left of C_DATA, which keeps its
    -- first 500 characters (clause 2.5.2.2).
    UPDATE customer
    SET c_balance = c_balance - p_amount,
        c_ytd_payment = c_ytd_payment + p_amount,
        c_payment_cnt = c_payment_cnt + 1,
        c_data = CASE WHEN c_credit = 'BC'
                      THEN left(concat_ws(' ', v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id,
                                          p_amount, c_data), 500)
                      ELSE c_data END
    WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id;

    UPDATE district SET d_ytd = d_ytd + p_amount
    WHERE d_w_id = p_w_id AND d_id = p_d_id
    RETURNING d_name INTO v_d_name;

    UPDATE warehouse SET w_ytd = w_ytd + p_amount
    WHERE w_id = p_w_id
    RETURNING w_name INTO v_w_name;

    -- H_DATA is W_NAME and D_NAME separated by 4 spaces.
    INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES (v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, localtimestamp, p_amount,
            v_w_name || '    ' || v_d_name);
END
$$;

-- Order-Status (clause 2.6): the customer (by number, or by last name when p_by_name = 1),
-- its last order and that order's lines.
CREATE PROCEDURE tpcc_order_status(p_w_id int, p_d_id int, p_c_id int, p_by_name int,
                                   p_c_last_num int)
LANGUAGE plpgsql
AS $$
DECLARE
    v_c_id       int := p_c_id;
    v_balance    numeric;
    v_first      varchar;
    v_middle     char(2);
    v_last       varchar;
    v_o_id       int;
    v_entry_d    timestamp;
    v_carrier_id int;
    v_lines      int;
    v_quantity   int;
    v_amount     numeric;
    v_delivered  timestamp;
BEGIN
    IF p_by_name = 1 THEN
        v_c_id := tpcc_customer_by_name(p_w_id, p_d_id, p_c_last_num);
    END IF;

    SELECT c_balance, c_first, c_middle, c_last INTO v_balance, v_first, v_middle, v_last
    FROM customer WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = v_c_id;

    SELECT o_id, o_entry_d, o_carrier_id INTO v_o_id, v_entry_d, v_carrier_id
    FROM orders WHERE o_w_id = p_w_id AND o_d_id = p_d_id AND o_c_id = v_c_id
    ORDER BY o_id DESC LIMIT 1;

    -- Every line is read: number of lines, quantities, amounts, delivery dates.
    SELECT count(*), sum(ol_quantity), sum(ol_amount), max(ol_delivery_d)
    INTO v_lines, v_quantity, v_amount, v_delivered
    FROM order_line WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id AND ol_o_id = v_o_id;
END
$$;

-- Delivery (clause 2.7): the oldest undelivered order of each district of warehouse p_w_id
-- is delivered by carrier p_carrier_id. Run directly, not deferred (clause 2.7.2 allows
-- deferral; it does not change the database work).
CREATE PROCEDURE tpcc_delivery(p_w_id int, p_carrier_id int)
LANGUAGE plpgsql
AS $$
DECLARE
    v_o_id   int;
    v_c_id   int;
    v_amount numeric;
BEGIN
    FOR v_d_id IN 1 .. 10 LOOP
        -- The oldest new order. One locked by a concurrent Delivery is being delivered by
        -- it: take the next one instead of waiting.
        SELECT no_o_id INTO v_o_id
        FROM new_order WHERE no_w_id = p_w_id AND no_d_id = v_d_id
        ORDER BY no_o_id LIMIT 1
        FOR UPDATE SKIP LOCKED;
        -- No undelivered order in this district: skip it (clause 2.7.4.2).
        CONTINUE WHEN NOT FOUND;

        DELETE FROM new_order
        WHERE no_w_id = p_w_id AND no_d_id = v_d_id AND no_o_id = v_o_id;

        UPDATE orders SET o_carrier_id = p_carrier_id
        WHERE o_w_id = p_w_id AND o_d_id = v_d_id AND o_id = v_o_id
        RETURNING o_c_id INTO v_c_id;

        WITH delivered AS (
            UPDATE order_line SET ol_delivery_d = localtimestamp
            WHERE ol_w_id = p_w_id AND ol_d_id = v_d_id AND ol_o_id = v_o_id
            RETURNING ol_amount
        )
        SELECT sum(ol_amount) INTO v_amount FROM delivered;

        UPDATE customer
        SET c_balance = c_balance + v_amount,
            c_delivery_cnt = c_delivery_cnt + 1
        WHERE c_w_id = p_w_id AND c_d_id = v_d_id AND c_id = v_c_id;
    END LOOP;
END
$$;

-- Stock-Level (clause 2.8): how many distinct items of the last 20 orders of district
-- (p_w_id, p_d_id) have a stock quantity in the home warehouse below p_threshold.
CREATE PROCEDURE tpcc_stock_level(p_w_id int, p_d_id int, p_threshold int)
LANGUAGE plpgsql
AS $$
DECLARE
    v_next_o_id int;
    v_low_stock int;
BEGIN
    SELECT d_next_o_id INTO v_next_o_id
    FROM district WHERE d_w_id = p_w_id AND d_id = p_d_id;

    SELECT count(DISTINCT s_i_id) INTO v_low_stock
    FROM order_line
    JOIN stock ON s_w_id = p_w_id AND s_i_id = ol_i_id
    WHERE ol_w_id = p_w_id AND ol_d_id = p_d_id
      AND ol_o_id >= v_next_o_id - 20 AND ol_o_id < v_next_o_id
      AND s_quantity < p_threshold;
END
$$;
