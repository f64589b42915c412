# The PostgreSQL installs on the host: each candidate bindir, then pg_config's from the PATH.
# sh -c SCRIPT sh BINDIR...
# Prints "bindir<TAB>what postgres --version says" for each bindir that holds postgres.
for d in "$@"; do
  [ -x "$d/postgres" ] && printf '%s\t%s\n' "$d" "$("$d/postgres" --version 2>&1)"
done
if command -v pg_config >/dev/null 2>&1; then
  d=$(pg_config --bindir 2>/dev/null) && [ -x "$d/postgres" ] &&
    printf '%s\t%s\n' "$d" "$("$d/postgres" --version 2>&1)"
fi
exit 0
