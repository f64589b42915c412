# The PostgreSQL programs on the host: PROGRAM in each candidate bindir, then in every
# /usr/lib/postgresql/*/bin and in pg_config's bindir from the PATH.
# sh -c SCRIPT sh PROGRAM BINDIR...
# Prints "bindir<TAB>what PROGRAM --version says" for each bindir that holds PROGRAM (a
# bindir may come twice).
p=$1; shift
for d in "$@" /usr/lib/postgresql/*/bin; do
  [ -x "$d/$p" ] && printf '%s\t%s\n' "$d" "$("$d/$p" --version 2>&1)"
done
if command -v pg_config >/dev/null 2>&1; then
  d=$(pg_config --bindir 2>/dev/null) && [ -x "$d/$p" ] &&
    printf '%s\t%s\n' "$d" "$("$d/$p" --version 2>&1)"
fi
exit 0
