# Create a cluster's directory inside the run's directory on the host, each marked as teiten's own.
# sh -c SCRIPT sh MARKER BASE ROOT BASE_TEXT ROOT_TEXT
#   MARKER: the marker file's name; BASE: the run's directory (created and marked when missing);
#   ROOT: the cluster's directory (must not exist yet); BASE_TEXT, ROOT_TEXT: the markers' text.
# Exit status 3 when ROOT exists, or BASE exists without a marker.
set -e
marker=$1; shift
if [ -e "$2" ]; then
  echo "$2 already exists; teiten only creates new directories there" >&2; exit 3
fi
if [ ! -d "$1" ]; then
  mkdir -p "$1"; printf '%s' "$3" > "$1/$marker"
elif [ ! -f "$1/$marker" ]; then
  echo "$1 exists and has no $marker marker: teiten did not create it" >&2; exit 3
fi
mkdir "$2"; printf '%s' "$4" > "$2/$marker"
