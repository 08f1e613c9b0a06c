#!/usr/bin/env bash
# `make bench`: every benchmark under scripts/bench/, one file per concern.
set -euo pipefail
cd "$(dirname "$0")/.."
for b in scripts/bench/*.sh; do
    echo "== $b"
    bash "$b"
done
