#!/usr/bin/env bash
# An engine version's memory beyond its cache (`cache_overhead:` in
# engines/<engine>.yaml; issue 28 point 4; needs root). Runs ENGINE@VERSION
# here, on the cgroup backend, with a minimal cache (OVERHEAD_CACHE, 16MiB)
# under a 1 GiB cap: a small load (OVERHEAD_RECORDS, 5000 YCSB records of 1 KB: Redis, whose cache holds
# its data, fits them in the minimal cache),
# then 10 s of reads at 8 client threads. The overhead is the largest
# resident memory of the server's cgroup (rss of its memory stats, as the
# cell's samples.json records it every second) less what of the cache the
# data can fill (the smaller of the cache and the records' bytes). Prints the
# figure in the form the engine spec takes, so that a user reruns it on
# their machine and pastes the line under `cache_overhead: versions:`.
# For engines that run here (redis, postgres, mariadb, myrocks,
# secantusdb); MongoDB and TokuMX run only from images (docker backend:
# OVERHEAD_BACKEND=docker).
# BENCHCAGE_BIN: the binary (default: a fresh release build).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ $# -ne 1 ] || [[ "$1" != *@* ]]; then
    echo "usage: scripts/bench/overhead.sh ENGINE@VERSION   (e.g. redis@7.0)" >&2
    exit 2
fi
target=$1
cache=${OVERHEAD_CACHE:-16MiB}
records=${OVERHEAD_RECORDS:-5000}
backend=${OVERHEAD_BACKEND:-cgroup}
if [ -z "${BENCHCAGE_BIN:-}" ]; then
    cargo build --release -q
fi
BIN=${BENCHCAGE_BIN:-${CARGO_TARGET_DIR:-target}/release/benchcage}
tmp=$(mktemp -d /tmp/benchcage-overhead.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/overhead.yaml" <<YAML
description: cache_overhead of $target (scripts/bench/overhead.sh)
matrix:
  engines: [$target]
  environments:
    - {name: quickstart, set: {backend: $backend, server.memory: 1GiB, cache: $cache}}
dataset: {records: $records, field_count: 10, field_length: 100}
load: {threads: 2, batch: 100}
snapshots: false
phases:
  - {name: reads, builtin: {workload: c}, threads: 8, duration: 10s}
YAML

"$BIN" run "$tmp/overhead.yaml" --results "$tmp/results" >"$tmp/run.log" 2>&1 || {
    echo "overhead: the run failed:" >&2
    tail -n 20 "$tmp/run.log" >&2
    exit 1
}

python3 - "$tmp/results" "$target" "$cache" "$records" <<'PY'
import datetime, json, pathlib, re, sys

results, target, cache, records = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
run = next(p for p in results.iterdir() if (p / "run.json").is_file())
cell = next((run / "cells").iterdir())
rec = json.loads((cell / "cell.json").read_text())
if rec["status"] != "finished":
    sys.exit(f"overhead: cell {cell.name} {rec['status']}: {rec.get('failure')}")
samples = json.loads((cell / "samples.json").read_text())
rss = max(s["rss_bytes"] for s in samples if s.get("cgroup") == "server")
units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
m = re.fullmatch(r"(\d+)(KiB|MiB|GiB)", cache)
cache_bytes = int(m.group(1)) * units[m.group(2)] if m else 0
# The cache holds at most the data loaded (10 fields of 100 B a record).
held = min(cache_bytes, int(records) * 1000)
over = max(rss - held, 0)
mib = -(-over // (1 << 20))
version = target.split("@", 1)[1]
day = datetime.date.today().isoformat()
print(f'"{version}": {{size: {mib}MiB, source: "measured here by scripts/bench/overhead.sh {target} '
      f'on {day}: server RSS {rss / (1 << 20):.0f} MiB, {held / (1 << 20):.0f} MiB of it the {cache} cache holding {records} records"}}')
PY
