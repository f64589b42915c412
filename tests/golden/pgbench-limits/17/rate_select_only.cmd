# pgbench 17.11 against PostgreSQL 17.11, pgbench -i -s 1
argv: pgbench -n -h SOCK -p 54399 -c 2 -j 1 -T 3 -M prepared -R 300 -L 5 -P 1 -r -b select-only postgres
exit_code: 0
