# Kill (TERM, then KILL) every process whose working directory is a data directory (the
# postmaster and its backends chdir there): the layer after pg_ctl. Linux /proc.
# sh -c SCRIPT sh DATA
#   DATA: the data directory.
# Prints how many processes it found, when it found any.
d=$(cd "$1" 2>/dev/null && pwd -P) || exit 0
found=""
for p in /proc/[0-9]*; do
  [ "$(readlink "$p/cwd" 2>/dev/null)" = "$d" ] && found="$found ${p#/proc/}"
done
[ -n "$found" ] || exit 0
echo "$found" | wc -w
kill -TERM $found 2>/dev/null; sleep 2; kill -KILL $found 2>/dev/null
exit 0
