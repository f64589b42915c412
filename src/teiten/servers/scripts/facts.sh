# What teiten needs to know of the host, as key=value lines: uid, home, conn ($SSH_CONNECTION),
# mem (the MemTotal line of /proc/meminfo), cpus, uname and boot_id (the running kernel's: hosts
# with the same one are one machine, as network namespaces or containers of it are).
# sh -c SCRIPT sh (no arguments)
printf 'uid=%s\n' "$(id -u)"
printf 'home=%s\n' "$HOME"
printf 'conn=%s\n' "$SSH_CONNECTION"
printf 'mem=%s\n' "$(grep '^MemTotal:' /proc/meminfo 2>/dev/null)"
printf 'cpus=%s\n' "$(getconf _NPROCESSORS_ONLN 2>/dev/null)"
printf 'uname=%s\n' "$(uname -srm)"
printf 'boot_id=%s\n' "$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)"
