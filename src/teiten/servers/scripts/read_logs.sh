# A cluster's logs: startup.log first, then the server's own files, oldest first.
# sh -c SCRIPT sh LOG_DIR
#   LOG_DIR: the log directory (a missing one prints nothing).
cd "$1" 2>/dev/null || exit 0
[ -f startup.log ] && cat startup.log
for f in postgresql-*.log; do [ -f "$f" ] && cat "$f"; done
exit 0
