#!/usr/bin/env bash
# Fetches the upstream source of a PostgreSQL major from Debian's source packages and
# unpacks it into DEST; prints the path of the source directory (DEST/postgresql-X.Y).
#   usage: scripts/fetch-pg-source.sh DEST [MAJOR]     (MAJOR defaults to 15)
#
# It unpacks the pristine upstream tarball (*.orig.tar.*), not Debian's patched tree:
# Debian's patches move pkglibdir to /usr/lib/postgresql/MAJOR/lib, which a build for
# teiten's cache must not do. When DEST already holds the source, it prints it and stops.
# Enabling deb-src (a file /etc/apt/sources.list.d/teiten-src.sources mirroring the deb
# entries of debian.sources) needs root; so does nothing else.
set -euo pipefail

dest="${1:?usage: fetch-pg-source.sh DEST [MAJOR]}"
major="${2:-15}"
say() { echo "fetch-pg-source: $*" >&2; }

found_source() {
  local dir
  for dir in $(ls -d "$dest"/postgresql-"$major".*/ 2>/dev/null | sort -V -r); do
    dir="${dir%/}"
    if [ -x "$dir/configure" ] && [ -d "$dir/src/backend" ]; then
      echo "$dir"
      return 0
    fi
  done
  return 1
}

mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
if found_source; then
  exit 0
fi

if ! command -v apt-get >/dev/null; then
  say "needs apt-get (Debian/Ubuntu); elsewhere download postgresql-$major.N.tar.bz2 from" \
      "https://ftp.postgresql.org/pub/source/ and give it to 'teiten install --from-source'"
  exit 1
fi

versions() {
  apt-cache showsrc "postgresql-$major" 2>/dev/null | awk '/^Version:/ {print $2}' | sort -u -V -r
}

if [ -z "$(versions)" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    say "apt knows no source package postgresql-$major; enabling deb-src needs root"
    exit 1
  fi
  sources=/etc/apt/sources.list.d/debian.sources
  if [ ! -f "$sources" ]; then
    say "no $sources to take the deb-src entries from; add deb-src lines to apt's sources"
    exit 1
  fi
  say "enabling deb-src in /etc/apt/sources.list.d/teiten-src.sources"
  # The same stanzas as debian.sources (URIs, Suites, Components, Signed-By), as deb-src.
  sed -e 's/^Types:.*/Types: deb-src/' -e '/^#/d' "$sources" \
    > /etc/apt/sources.list.d/teiten-src.sources
  apt-get update -qq >&2 || say "apt-get update reported errors; trying what it found"
fi

work="$dest/.download-$$"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
chmod 777 "$work"  # apt downloads as the _apt account when it can
fetched=""
# Newest first: a security suite may list a version whose source files its pool lacks (404).
for version in $(versions); do
  say "downloading the source of postgresql-$major $version"
  if (cd "$work" && apt-get source --download-only -qq "postgresql-$major=$version" >&2); then
    fetched="$version"
    break
  fi
  rm -f "$work"/*
done
if [ -z "$fetched" ]; then
  say "apt-get source postgresql-$major failed for every version ($(versions | tr '\n' ' '))"
  exit 1
fi

upstream="${fetched%-*}"  # 15.18-0+deb12u1 -> 15.18
upstream="${upstream#*:}"
orig="$(ls "$work"/postgresql-"$major"_"$upstream".orig.tar.* 2>/dev/null | head -n 1)"
if [ -z "$orig" ]; then
  say "the source package $fetched has no upstream tarball (*.orig.tar.*)"
  exit 1
fi
tar -xf "$orig" -C "$work" --no-same-owner --no-same-permissions
if [ ! -x "$work/postgresql-$upstream/configure" ]; then
  say "$(basename "$orig") did not unpack into postgresql-$upstream/"
  exit 1
fi
mv "$work/postgresql-$upstream" "$dest/"
mv "$orig" "$dest/"  # the tarball too: 'teiten install --from-source' takes it as well
echo "$dest/postgresql-$upstream"
