#!/usr/bin/env bash
# Installs inferno (the maintained Rust port of the FlameGraph tools) into the virtualenv,
# for teiten's flame graphs. Needs cargo; without it teiten still profiles and says that
# flame graphs are missing.
set -euo pipefail
venv="$1"
version=0.12.8
if [ -x "$venv/bin/inferno-flamegraph" ]; then
  exit 0
fi
if ! command -v cargo >/dev/null; then
  echo "install-inferno: cargo not found; flame graphs will be missing (install Rust's cargo)"
  exit 0
fi
echo "install-inferno: building inferno $version with cargo (about a minute)"
cargo install --quiet --locked --version "$version" --root "$venv" inferno
