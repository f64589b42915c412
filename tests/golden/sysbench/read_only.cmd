# sysbench 1.0.20 (Debian 12), PostgreSQL 17.11 (PyPI) on this machine (2 CPUs)
argv: sysbench oltp_read_only --tables=2 --table-size=10000 --db-driver=pgsql --pgsql-host=/tmp/sbx --pgsql-port=55432 --pgsql-user=postgres --pgsql-db=sbgold --threads=2 --time=3 --report-interval=1 --histogram run
exit_code: 0
