# Stop every Pgpool-II and cluster a killed run left on the host (SIGKILL to each pgpool named
# by its pid file there, and to the processes whose working directory is one of its data
# directories), remove the socket directories they name (when marked), then the run's marked
# directory. Sent after pgpool_kill.sh, whose kill_pgpool it calls.
# sh -c SCRIPT sh MARKER RUNTIME_CONF RUN
#   MARKER: the marker file's name; RUNTIME_CONF: the name of the settings file teiten writes
#   on every start; RUN: the name of the killed run.
# Prints a line for each thing it killed or removed.
marker=$1 runtime_conf=$2; shift 2
base="$HOME/.cache/teiten/clusters/$1"
[ -f "$base/$marker" ] || exit 0
for f in "$base"/*/logs/*/pgpool*/pgpool.pid; do
  [ -f "$f" ] || continue
  d=${f%/pgpool.pid}
  kill_pgpool "$d"
  [ -z "$killed" ] || echo "killed leftover Pgpool-II $killed in $d"
done
for d in "$base"/*/data "$base"/*/node*/data; do
  real=$(cd "$d" 2>/dev/null && pwd -P) || continue
  found=""
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/cwd" 2>/dev/null)" = "$real" ] && found="$found ${p#/proc/}"
  done
  if [ -n "$found" ]; then
    kill -KILL $found 2>/dev/null
    echo "killed leftover server processes$found in $d"
  fi
  s=$(sed -n "s/^unix_socket_directories = '\(..*\)'$/\1/p" "$d/$runtime_conf" 2>/dev/null)
  if [ -n "$s" ] && [ -f "$s/$marker" ]; then rm -rf -- "$s"; echo "removed $s"; fi
done
sleep 1
rm -rf -- "$base" && echo "removed $base"
exit 0
