# Remove a directory of the host, only when teiten's marker is in it (a missing one is fine).
# sh -c SCRIPT sh MARKER DIR
#   MARKER: the marker file's name; DIR: the directory.
# Exit status 3 when DIR has no marker (it is left alone).
marker=$1; shift
[ -e "$1" ] || exit 0
if [ -f "$1/$marker" ]; then rm -rf -- "$1"; else
  echo "not removing $1: it has no $marker marker, so teiten did not create it" >&2; exit 3
fi
