# pgbench 17.11, run from a directory holding read.pgbench, update.pgbench, missing.pgbench, conflict.pgbench
argv: /tmp/goldens-work/bin17/pgbench -h /tmp/goldens-work/sock17 -p 55417 -U postgres -n -P 1 -r -T 3 -c 2 -j 1 -b select-only postgres
exit_code: 0
