# Defines kill_pgpool DIR, for the scripts sent after this one (pgpool_stop.sh, leftovers.sh).
# It kills the pgpool of the directory DIR whose pid file names it (and only when that
# process runs with the configuration file there): stopped first, so that it cannot fork new
# children for the ones killed (they would outlive it, adopted by init), then its children,
# then itself. Sets $killed (its pid, or empty) and $pid.
kill_pgpool() {
  killed=""
  pid=$(tr -d '\000' < "$1/pgpool.pid" 2>/dev/null) || pid=""
  case "$pid" in ''|*[!0-9]*) pid="" ;; esac
  if [ -n "$pid" ] && tr '\000' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$1/pgpool.conf"; then
    kill -STOP "$pid" 2>/dev/null; pkill -KILL -P "$pid" 2>/dev/null
    kill -KILL "$pid" 2>/dev/null; killed="$pid"
  fi
}
