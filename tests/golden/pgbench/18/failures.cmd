# pgbench 18.6, run from a directory holding read.pgbench, update.pgbench, missing.pgbench, conflict.pgbench
env: PGOPTIONS=-c default_transaction_isolation=repeatable\ read
argv: /tmp/goldens-work/bin18/pgbench -h /tmp/goldens-work/sock18 -p 55418 -U postgres -n -P 1 -r -T 3 -c 4 -j 2 --max-tries=1 -f conflict.pgbench postgres
exit_code: 0
