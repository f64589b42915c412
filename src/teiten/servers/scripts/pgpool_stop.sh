# Stop a Pgpool-II: 'pgpool stop', unless it logged a FATAL error (then it ignores stop
# requests), then kill what is left; remove pool_passwd. Sent after pgpool_kill.sh, whose
# kill_pgpool it calls.
# sh -c SCRIPT sh DIR PGPOOL
#   DIR: the instance's directory; PGPOOL: the pgpool binary.
# Prints a line when it had to kill it.
d="$1"
pid=$(tr -d '\000' < "$d/pgpool.pid" 2>/dev/null) || pid=""
if [ -n "$pid" ] && ! grep -q ' main pid [0-9]*: FATAL:' "$d/log/pgpool.log" 2>/dev/null; then
  "$2" -f "$d/pgpool.conf" -F "$d/pcp.conf" -m fast stop >/dev/null 2>&1 || true
  i=0; while [ $i -lt 50 ] && kill -0 "$pid" 2>/dev/null; do sleep 0.1; i=$((i+1)); done
fi
kill_pgpool "$d"
rm -f -- "$d/pool_passwd"
[ -z "$killed" ] || echo "killed leftover pgpool processes of $killed"
exit 0
