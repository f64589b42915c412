# The system monitor of a server's host (teiten.monitors.remote_system), run over ssh.
# Arguments: SECONDS MARK FILE... : every SECONDS, print each /proc/FILE headed by a line
# MARK FILE, then MARK end. The first line is MARK hz CLK_TCK. A failed write (the channel
# closed when teiten stopped reading) ends the loop.
every=$1
mark=$2
shift 2
printf '%shz %s\n' "$mark" "$(getconf CLK_TCK 2>/dev/null || echo 100)" || exit 0
while :; do
  for f in "$@"; do
    printf '%s%s\n' "$mark" "$f" && cat "/proc/$f" || exit 0
  done
  printf '%send\n' "$mark" || exit 0
  sleep "$every"
done
