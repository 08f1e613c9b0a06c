#!/usr/bin/env bash
# Per-cell overhead (`make bench`, cells section; issue 31 point 6; needs
# root). Runs tests/scenarios/bench-cells.yaml on the cgroup backend with the
# release build: 50 redis cells, 1000 records, one 1 s phase each, no
# snapshots. A cell's wall time is the time between the end of the cell
# before it and its own end (the mtimes of their cell.json, so the matrix's
# work between cells counts: CPU claim, sandbox, writing the records); the
# first cell has no cell before it and is left out of the mean. Its overhead
# is its wall time minus its load and its phases (stage_s in cell.json).
# A cell that waited for CPUs another live run held (the run's log says
# `waiting:`) is left out too: that wait is the other run's, not the cell's.
# Prints the mean, median and max overhead, and each stage's mean over the
# cells ("between" is the wall time outside every stage), and writes
# results/bench/cells.json. Target: mean overhead under 50 ms.
# BENCHCAGE_BIN: the binary measured (default: a fresh release build).
# BENCH_CELLS_REPS: repetitions (default 50).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ -z "${BENCHCAGE_BIN:-}" ]; then
    cargo build --release -q
fi
BIN=${BENCHCAGE_BIN:-${CARGO_TARGET_DIR:-target}/release/benchcage}
REPS=${BENCH_CELLS_REPS:-50}
scenario=tests/scenarios/bench-cells.yaml
tmp=$(mktemp -d /tmp/benchcage-bench-cells.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

start=$(date +%s.%N)
BENCHCAGE_SNAPSHOTS=off "$BIN" run "$scenario" --results "$tmp/results" \
    --set "repetitions=$REPS" >"$tmp/run.log" 2>&1 || {
    echo "bench cells: the run failed:" >&2
    tail -n 20 "$tmp/run.log" >&2
    exit 1
}
end=$(date +%s.%N)

python3 - "$tmp/results" "$start" "$end" "$BIN" "$tmp/run.log" <<'EOF'
import json, pathlib, re, statistics, sys

results, start, end, binary = pathlib.Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
run = next(p for p in results.iterdir() if (p / "run.json").is_file())
cells = []
for f in (run / "cells").glob("*/cell.json"):
    rec = json.loads(f.read_text())
    if rec["status"] != "finished":
        sys.exit(f"bench cells: cell {f.parent.name} {rec['status']}: {rec.get('failure')}")
    cells.append((f.stat().st_mtime, rec))
cells.sort(key=lambda c: c[0])
# Positions (1-based) of the cells that waited for another run's CPUs.
waited = {int(m) for m in re.findall(r"^\[(\d+)/\d+ [^]]*\] waiting:", pathlib.Path(sys.argv[5]).read_text(), re.M)}
# The lifecycle's own stages (src/run/cell/mod.rs OWN_STAGES); every other
# stage but `load` is a measured phase.
own = ["provision", "render", "restore", "snapshot", "start", "ready", "network", "replicas",
       "hog", "settle", "collect", "teardown"]
rows = []
for i, ((prev, _), (now, rec)) in enumerate(zip(cells, cells[1:]), start=2):
    if i in waited:
        continue
    s = rec["stage_s"]
    load = s.get("load", 0.0)
    phases = sum(v for k, v in s.items() if k not in own and k != "load")
    wall = now - prev
    row = {k: s.get(k, 0.0) for k in own}
    row["between"] = wall - sum(s.values())
    row["overhead"] = wall - load - phases
    row["phase_stage"] = phases
    row["load"] = load
    rows.append(row)
mean = lambda k: statistics.fmean(r[k] for r in rows)
ms = lambda v: round(v * 1000, 1)
over = [r["overhead"] for r in rows]
stages = {k: ms(mean(k)) for k in own + ["between"] if any(r[k] for r in rows)}
out = {
    "scenario": "tests/scenarios/bench-cells.yaml",
    "binary": binary,
    "cells": len(cells),
    "cells_measured": len(rows),
    "cells_that_waited_for_cpus": len(waited),
    "run_wall_s": round(end - start, 2),
    "overhead_ms_mean": ms(statistics.fmean(over)),
    "overhead_ms_median": ms(statistics.median(over)),
    "overhead_ms_max": ms(max(over)),
    "stage_ms_mean": stages,
    "load_ms_mean": ms(mean("load")),
    "phase_stage_ms_mean": ms(mean("phase_stage")),
}
print(f"{len(cells)} cells in {out['run_wall_s']} s; per cell, over {len(rows)} cells "
      f"(not the first, nor {len(waited)} that waited for another run's CPUs):")
print(f"  overhead (wall - load - phases): mean {out['overhead_ms_mean']} ms, "
      f"median {out['overhead_ms_median']} ms, max {out['overhead_ms_max']} ms (target: mean < 50 ms)")
print(f"  load {out['load_ms_mean']} ms, phase stage {out['phase_stage_ms_mean']} ms (a 1 s phase)")
for k, v in stages.items():
    print(f"  {k:<10} {v:7.1f} ms")
path = pathlib.Path("results/bench/cells.json")
path.parent.mkdir(parents=True, exist_ok=True)
path.write_text(json.dumps(out, indent=2) + "\n")
print(f"written: {path}")
EOF
