#!/usr/bin/env bash
# Snapshot benchmark (`make bench`, snapshots section; issue 18).
#
# Two matrices, each run twice on the same build: once with
# `--no-snapshots` (every cell loads) and once with an empty snapshot
# cache (the first cell of a key loads, stops the engine and saves its data
# dir; the cells after it restore it instead of loading):
#   ram-fit: scenarios/doesnt-fit-in-ram.yaml, MyRocks, 4 settle caps of
#            one ~600 MB load;
#   nightly: scenarios/nightly.yaml --only postgres@15, 3 repetitions.
# The snapshot run digests its records (`snapshots: {verify: true}`), so
# the script can check that every restored cell holds the same records as
# the load that saved them (`--no-snapshots` digests nothing).
# The nightly runs a third time on the cache the second filled: the nights
# after the first, when every repetition restores.
# Prints, per matrix: the time spent loading (+ saving + restoring) with
# and without snapshots and its ratio, each restore against the load it
# replaces, the wall time of the whole run, and whether the digests match.
# Writes results/bench/snapshots.json. Targets: ratio <= 0.35 (ram-fit),
# each restore <= 0.2 of its load.
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN=${BENCHCAGE_BIN:-${CARGO_TARGET_DIR:-target}/debug/benchcage}
if [ ! -x "$BIN" ]; then cargo build; fi
tmp=$(mktemp -d /tmp/benchcage-bench-snapshots.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# A copy of the scenario that digests its records, in a scratch home whose
# specs are the repository's.
verified() { # scenario-name -> path of the copy
    local src=scenarios/$1.yaml dst=$tmp/$1-verified.yaml
    grep -v '^snapshots:' "$src" >"$dst"
    printf 'snapshots: {verify: true}\n' >>"$dst"
    echo "$dst"
}

# run <label> <scenario file> [args...]: one run into $tmp/<label>, wall time
# in $tmp/<label>.wall.
run() {
    local label=$1 scenario=$2
    shift 2
    local start
    start=$(date +%s.%N)
    BENCHCAGE_SNAPSHOTS=$tmp/cache-${CACHE:-$label} "$BIN" run "$scenario" --results "$tmp/$label" "$@" \
        >"$tmp/$label.log" 2>&1 || { tail -20 "$tmp/$label.log"; return 1; }
    python3 -c "import sys, time; print(time.time() - float(sys.argv[1]))" "$start" >"$tmp/$label.wall"
}

# SNAP_ONLY=nightly (or ramfit) runs one matrix.
only=${SNAP_ONLY:-}
ramfit=$(verified doesnt-fit-in-ram)
nightly=$(verified nightly)
if [ "$only" != nightly ]; then
run ramfit-fresh "$ramfit" --no-snapshots
run ramfit-snap "$ramfit"
fi
if [ "$only" != ramfit ]; then
run nightly-fresh "$nightly" --only postgres@15 --no-snapshots --fetch
run nightly-snap "$nightly" --only postgres@15 --fetch
# The next night: the cache the first one filled, every repetition restores.
CACHE=nightly-snap run nightly-next "$nightly" --only postgres@15 --fetch
fi

python3 - "$tmp" <<'EOF'
import json, pathlib, sys
tmp = pathlib.Path(sys.argv[1])

def cells(label):
    run = next(p for p in (tmp / label).iterdir() if (p / "run.json").is_file())
    return [json.loads((c / "cell.json").read_text()) for c in sorted((run / "cells").iterdir())]

def data_time(c):
    s = c.get("stage_s", {})
    return sum(s.get(k, 0.0) for k in ("load", "snapshot", "restore"))

out_path = pathlib.Path("results/bench/snapshots.json")
# A run of one matrix keeps the other's last numbers.
out = json.loads(out_path.read_text()) if out_path.is_file() else {}
for name, fresh_label, snap_label in (
    ("ramfit", "ramfit-fresh", "ramfit-snap"),
    ("nightly", "nightly-fresh", "nightly-snap"),
    ("nightly_next_night", "nightly-fresh", "nightly-next"),
):
    if not (tmp / fresh_label).is_dir():
        continue
    fresh, snap = cells(fresh_label), cells(snap_label)
    loads = [c["stage_s"]["load"] for c in fresh]
    restores = [(c["stage_s"]["restore"], c["load_source"]["load_s"])
                for c in snap if (c.get("load_source") or {}).get("kind") == "snapshot"]
    # `--no-snapshots` digests nothing: the cells of the snapshot run (the
    # load that saved, the restores) are compared.
    digests = {c.get("data_digest") for c in snap}
    t_fresh, t_snap = sum(map(data_time, fresh)), sum(map(data_time, snap))
    wall = lambda l: float((tmp / f"{l}.wall").read_text())
    r = {
        "cells": len(fresh),
        "load_s_without_snapshots": round(t_fresh, 1),
        "load_save_restore_s_with_snapshots": round(t_snap, 1),
        "ratio": round(t_snap / t_fresh, 3),
        "restore_vs_its_load": [round(a / b, 3) for a, b in restores],
        "digests_identical": len(digests) == 1 and None not in digests,
        "wall_s_without": round(wall(fresh_label), 1),
        "wall_s_with": round(wall(snap_label), 1),
    }
    out[name] = r
    print(f"{name}: {r['cells']} cells; loading {r['load_s_without_snapshots']}s without snapshots, "
          f"{r['load_save_restore_s_with_snapshots']}s with (ratio {r['ratio']}); "
          f"each restore / its load: {r['restore_vs_its_load']}; digests identical: {r['digests_identical']}; "
          f"wall {r['wall_s_without']}s -> {r['wall_s_with']}s")
out_path.parent.mkdir(parents=True, exist_ok=True)
out_path.write_text(json.dumps(out, indent=2) + "\n")
EOF
