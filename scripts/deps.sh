#!/usr/bin/env bash
# Installs what benchcage's tests and demo need on a bare Debian 12 machine.
# Idempotent: a second run installs nothing and returns quickly.
set -euo pipefail

packages=(
  redis-server postgresql postgresql-contrib mariadb-server mariadb-plugin-rocksdb
  sysbench debootstrap docker.io docker-registry chromium procps psmisc iproute2 python3
  slurm-wlm slurm-client munge systemd
  e2fsprogs mount
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# `benchcage fetch` downloads engine versions with npm and pip, through
# this host's own registry configuration; use the ones the host has.
command -v npm >/dev/null || missing+=(npm)
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
# py-tpcc's pinned pymongo lives in a virtualenv benchcage makes.
python3 -m venv --help >/dev/null 2>&1 || missing+=(python3-venv)
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! python3 -c 'import secantus' 2>/dev/null; then
  echo "deps: pip install secantusdb"
  pip install -q secantusdb
fi
