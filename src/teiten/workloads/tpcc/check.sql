-- TPC-C-like workload: the consistency conditions 1-4 of the spec (clause 3.3.2.1-4).
--
-- Run any time after load.sql; then SELECT * FROM tpcc_consistency(). Each row gives a
-- condition, what it checks, and how many warehouses (condition 1) or districts
-- (conditions 2-4) break it: all zero on a consistent database. It reads every order
-- line, so it takes a while on many warehouses. Run it when no transactions are running
-- (concurrent transactions can make a consistent database look inconsistent).
--
-- A district without rows in new_order (all its orders delivered) is checked only for
-- D_NEXT_O_ID - 1 = max(O_ID) in condition 2, and satisfies condition 3 (there is no
-- range of new orders to be contiguous).

CREATE FUNCTION tpcc_consistency()
RETURNS TABLE (condition int, description text, violations bigint)
LANGUAGE sql STABLE
AS $$
    WITH order_stats AS (
        SELECT o_w_id AS w_id, o_d_id AS d_id, max(o_id) AS max_o_id,
               sum(o_ol_cnt) AS ol_cnt
        FROM orders GROUP BY o_w_id, o_d_id
    ), new_order_stats AS (
        SELECT no_w_id AS w_id, no_d_id AS d_id, max(no_o_id) AS max_no_o_id,
               min(no_o_id) AS min_no_o_id, count(*) AS new_orders
        FROM new_order GROUP BY no_w_id, no_d_id
    ), order_line_stats AS (
        SELECT ol_w_id AS w_id, ol_d_id AS d_id, count(*) AS order_lines
        FROM order_line GROUP BY ol_w_id, ol_d_id
    ), districts AS (
        SELECT d.d_next_o_id, o.max_o_id, o.ol_cnt, n.max_no_o_id, n.min_no_o_id,
               n.new_orders, l.order_lines
        FROM district AS d
        LEFT JOIN order_stats AS o ON o.w_id = d.d_w_id AND o.d_id = d.d_id
        LEFT JOIN new_order_stats AS n ON n.w_id = d.d_w_id AND n.d_id = d.d_id
        LEFT JOIN order_line_stats AS l ON l.w_id = d.d_w_id AND l.d_id = d.d_id
    )
    SELECT 1, 'W_YTD = sum(D_YTD) per warehouse',
           (SELECT count(*)
            FROM warehouse AS w
            WHERE w.w_ytd IS DISTINCT FROM
                  (SELECT sum(d.d_ytd) FROM district AS d WHERE d.d_w_id = w.w_id))
    UNION ALL
    SELECT 2, 'D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) per district',
           count(*) FILTER (WHERE d_next_o_id - 1 IS DISTINCT FROM max_o_id
                               OR (new_orders IS NOT NULL AND max_no_o_id <> max_o_id))
    FROM districts
    UNION ALL
    SELECT 3, 'max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW_ORDER) per district',
           count(*) FILTER (WHERE max_no_o_id - min_no_o_id + 1 <> new_orders)
    FROM districts
    UNION ALL
    SELECT 4, 'sum(O_OL_CNT) = count(ORDER_LINE) per district',
           count(*) FILTER (WHERE ol_cnt IS DISTINCT FROM order_lines)
    FROM districts
    ORDER BY 1
$$;
