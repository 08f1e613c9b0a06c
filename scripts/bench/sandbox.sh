#!/usr/bin/env bash
# Sandbox timings (cgroup backend, needs root): provision and teardown of an
# empty sandbox (median of 100), and start-to-ready of redis and postgres
# (median of 10 and 5; postgres's initdb is reported separately).
# Prints one JSON line and writes it to results/bench/sandbox.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(cargo test --test sandbox -- --ignored --nocapture --exact \
    bench_provision_and_teardown_of_an_empty_sandbox 2>/dev/null | sed -n 's/^BENCH //p')
if [ -z "$out" ]; then
    echo "sandbox bench produced no result; run: cargo test --test sandbox -- --ignored --nocapture bench" >&2
    exit 1
fi
mkdir -p results/bench
printf '%s\n' "$out" | tee results/bench/sandbox.json
