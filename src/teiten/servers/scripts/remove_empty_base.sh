# Remove the run's directory on the host when nothing but teiten's marker is left in it.
# sh -c SCRIPT sh MARKER BASE
#   MARKER: the marker file's name; BASE: the run's directory.
marker=$1; shift
[ -f "$1/$marker" ] || exit 0
[ "$(ls -A "$1")" = "$marker" ] && rm -rf -- "$1"
exit 0
