#!/usr/bin/env bash
# Installs what teiten needs from the operating system on a fresh Debian/Ubuntu machine.
# teiten brings its own PostgreSQL (from PyPI); what it needs from the system is:
#   - an unprivileged account to run PostgreSQL as, when teiten runs as root;
#   - setfacl, to let that account traverse to $TEITEN_HOME when it is under /root;
#   - GNU cp (snapshots), always present;
#   - a C toolchain and PostgreSQL's build dependencies, for 'teiten install --from-source';
#   - Chromium and CJK fonts, to check the HTML report in a real browser (make test).
set -euo pipefail

need=()
command -v setfacl >/dev/null || need+=(acl)
command -v ps >/dev/null || need+=(procps)
# The wait-event monitor uses pg_wait_sampling where a server preloads it; the tests try it
# on the system's PostgreSQL 15.
if [ -x /usr/lib/postgresql/15/bin/postgres ] && [ ! -f /usr/lib/postgresql/15/lib/pg_wait_sampling.so ]; then
  need+=(postgresql-15-pg-wait-sampling)
fi
# The fulltext workload uses RUM where a server has it; the tests try it on the system's 15.
if [ -x /usr/lib/postgresql/15/bin/postgres ] && [ ! -f /usr/share/postgresql/15/extension/rum.control ]; then
  need+=(postgresql-15-rum)
fi
# fincore (util-linux) measures how much of a cluster's files a cold cache left resident.
command -v fincore >/dev/null || need+=(util-linux)
# Servers over ssh and several load clients (the tests start their own sshd on loopback),
# Pgpool-II for replication scale-out (S7), ip for network namespaces (S5).
command -v ssh >/dev/null || need+=(openssh-client)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
[ -x /usr/sbin/pgpool ] || need+=(pgpool2)
command -v ip >/dev/null || need+=(iproute2)
command -v nsenter >/dev/null || need+=(util-linux)
# perf for flame graphs (the tests profile a trial); the docker CLI for docker servers (the
# tests check what teiten says when no engine answers; installing it starts no daemon here).
command -v perf >/dev/null || need+=(linux-perf)
command -v docker >/dev/null || need+=(docker.io)
# stress-ng burns CPU beside the test suite, to show it passes on a busy machine (by hand:
# stress-ng --cpu 2 & make test); nothing in the suite needs it.
command -v stress-ng >/dev/null || need+=(stress-ng)
# mkfs.xfs makes the loop-mounted XFS (reflink=1) on which the tests and bench.snapshot check
# restores by reflink clone.
[ -x /usr/sbin/mkfs.xfs ] || need+=(xfsprogs)
# Source builds (teiten install --from-source; the tests build PostgreSQL 15 once).
command -v gcc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
command -v pkg-config >/dev/null || need+=(pkg-config)
[ -f /usr/include/readline/readline.h ] || need+=(libreadline-dev)
[ -f /usr/include/zlib.h ] || need+=(zlib1g-dev)
[ -d /usr/include/unicode ] || need+=(libicu-dev)
# ccache: source builds of nearby commits and checkouts reuse each other's objects.
[ -e /usr/lib/ccache/gcc ] || need+=(ccache)
if [ "${TEITEN_NO_BROWSER:-}" = "" ]; then
  command -v chromium >/dev/null || need+=(chromium)
  [ -d /usr/share/fonts/opentype/noto ] || need+=(fonts-noto-cjk)
fi
if [ ${#need[@]} -gt 0 ]; then  # each package once (fincore and nsenter are both util-linux)
  mapfile -t need < <(printf '%s\n' "${need[@]}" | awk '!seen[$0]++')
fi
if [ "$(id -u)" -ne 0 ]; then
  # Not root: install nothing, but say what is missing and the one command that installs it.
  # teiten runs without these (its own PostgreSQL comes from PyPI); what each one is for is
  # in the comments above: no flame graphs without perf, no browser check without chromium.
  if [ ${#need[@]} -gt 0 ]; then
    declare -A lacks=([linux-perf]="no flame graphs" [chromium]="no browser check of the report"
      [fonts-noto-cjk]="no Japanese in the browser check" [pgpool2]="no replication scale-out (S7)"
      [docker.io]="no docker servers" [openssh-server]="no ssh tests" [openssh-client]="no servers over ssh"
      [gcc]="no source builds" [make]="no source builds" [acl]="no TEITEN_HOME under /root"
      [ccache]="source builds compile everything every time"
      [iproute2]="no network namespaces (S5)" [util-linux]="no cold-cache residency or namespaces"
      [postgresql-15-rum]="no RUM in the full-text study" [postgresql-15-pg-wait-sampling]="no pg_wait_sampling"
      [stress-ng]="no busy-machine check of the suite" [xfsprogs]="no reflink-clone restore tests")
    said=()
    for p in "${need[@]}"; do
      [ -n "${lacks[$p]:-}" ] && said+=("$p (${lacks[$p]})") || said+=("$p")
    done
    echo "setup-system: not root, so nothing was installed; missing: ${said[*]}"
    echo "setup-system: to install them, run: sudo apt-get install -y ${need[*]}"
  fi
  exit 0
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "setup-system: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # sshd, pgpool2 and docker are services: installing them must not start them (policy-rc.d 101).
  made_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
  if [ -n "$made_policy" ]; then rm -f /usr/sbin/policy-rc.d; trap - EXIT; fi
fi

user="${TEITEN_SERVER_USER:-postgres}"
if ! id "$user" >/dev/null 2>&1; then
  echo "setup-system: creating the unprivileged account '$user' to run PostgreSQL as"
  useradd --system --user-group --home-dir /nonexistent --shell /usr/sbin/nologin "$user"
fi
