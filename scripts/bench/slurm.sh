#!/usr/bin/env bash
# Slurm overhead benchmark (`make bench`, slurm section; issue 17).
#
# The same 4-cell matrix (tests/scenarios/slurm-four.yaml: redis, 1000
# records, a 2 s phase) run twice on this machine: once locally, once with
# `--on slurm` on the local one-node cluster (scripts/slurm.sh starts it;
# one exclusive job per cell). Prints the wall time of each, the
# difference per cell, and the submitter's own split of that overhead per
# cell: from when a cell could start (submitted, node free) to benchcage
# starting on the node, and from the cell's end to gathered (the
# submitter polls Slurm every 0.5 s). Writes results/bench/slurm.json.
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN=${BENCHCAGE_BIN:-${CARGO_TARGET_DIR:-target}/debug/benchcage}
if [ ! -x "$BIN" ]; then cargo build; fi
bash scripts/slurm.sh
tmp=$(mktemp -d /tmp/benchcage-bench-slurm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
scenario=tests/scenarios/slurm-four.yaml
cells=4

wall() { # label args... -> seconds
    local label=$1
    shift
    local t0 t1
    t0=$(date +%s.%N)
    BENCHCAGE_RESULTS=$tmp/$label "$BIN" run "$scenario" "$@" >"$tmp/$label.out" 2>"$tmp/$label.err" || {
        echo "bench slurm: the $label run failed:" >&2
        tail -n 20 "$tmp/$label.err" >&2
        exit 1
    }
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l
}

local_s=$(wall local)
slurm_s=$(wall slurm --on slurm)
line=$(grep 'slurm overhead per cell' "$tmp/slurm.err" || true)
to_start=$(sed -n 's/.*submit to start \([0-9.]*\)s.*/\1/p' <<<"$line")
to_gather=$(sed -n 's/.*end to gathered \([0-9.]*\)s.*/\1/p' <<<"$line")
per_cell=$(echo "($slurm_s - $local_s) / $cells" | bc -l)

printf 'local run:   %6.1f s for %d cells\n' "$local_s" "$cells"
printf 'slurm run:   %6.1f s for %d cells (one exclusive job each)\n' "$slurm_s" "$cells"
printf 'overhead:    %6.2f s per cell (wall difference / cells)\n' "$per_cell"
printf '  of which:  submit (or node free) to start %s s, end to gathered %s s (mean per cell)\n' \
    "${to_start:-?}" "${to_gather:-?}"

mkdir -p results/bench
cat >results/bench/slurm.json <<EOF
{
  "scenario": "$scenario",
  "cells": $cells,
  "local_wall_s": $local_s,
  "slurm_wall_s": $slurm_s,
  "overhead_per_cell_s": $per_cell,
  "submit_to_start_s": ${to_start:-null},
  "end_to_gathered_s": ${to_gather:-null}
}
EOF
echo "written: results/bench/slurm.json"
