# pgbench 17.11 against PostgreSQL 17.11, pgbench -i -s 1
argv: pgbench -n -h SOCK -p 54399 -c 2 -j 1 -T 3 -R 100000 -L 0.2 -P 1 -r -b tpcb-like postgres
exit_code: 0
