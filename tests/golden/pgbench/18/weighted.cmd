# pgbench 18.6, run from a directory holding read.pgbench, update.pgbench, missing.pgbench, conflict.pgbench
argv: /tmp/goldens-work/bin18/pgbench -h /tmp/goldens-work/sock18 -p 55418 -U postgres -n -P 1 -r -T 3 -c 2 -j 1 -s 1 -f read.pgbench@2 -f update.pgbench@1 postgres
exit_code: 0
