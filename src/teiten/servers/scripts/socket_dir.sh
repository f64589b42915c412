# A new private directory (mode 0700, mktemp) for the unix sockets of a topology's nodes,
# marked as teiten's own.
# sh -c SCRIPT sh MARKER TEXT
#   MARKER: the marker file's name; TEXT: the marker's text.
# Prints the directory.
set -e
marker=$1; shift
d=$(mktemp -d /tmp/teiten-XXXXXXXX)
printf '%s' "$1" > "$d/$marker"
echo "$d"
