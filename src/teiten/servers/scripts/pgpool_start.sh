# Start a Pgpool-II (it daemonizes) with the configuration files of its directory.
# sh -c SCRIPT sh DIR PGPOOL
#   DIR: the instance's directory; PGPOOL: the pgpool binary.
set -e
cd "$1"
rm -f pgpool.pid; rm -rf log
"$2" -f "$1/pgpool.conf" -F "$1/pcp.conf" -a "$1/pool_hba.conf" -D
