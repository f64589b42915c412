# The host's Pgpool-II: its path, then what it says to --version (nothing when there is none).
# sh -c SCRIPT sh (no arguments)
p=$(command -v pgpool || true)
[ -n "$p" ] || for d in /usr/sbin /usr/local/sbin; do [ -x "$d/pgpool" ] && p="$d/pgpool" && break; done
[ -n "$p" ] || exit 0
echo "$p"
"$p" --version 2>&1
exit 0
