# pgbench 15.18 (Debian 15.18-0+deb12u1), run from a directory holding read.pgbench, update.pgbench, missing.pgbench, conflict.pgbench
argv: /tmp/goldens-work/bin15/pgbench -h /tmp/goldens-work/sock15 -p 55415 -U postgres -n -P 1 -r -T 3 -c 2 -j 1 -b select-only postgres
exit_code: 0
