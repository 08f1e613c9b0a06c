#!/usr/bin/env bash
# Sandbox timings (cgroup backend, needs root): provision and teardown of an
# empty sandbox (median of 100), and start-to-ready of redis and postgres
# (median of 10 and 5; postgres's initdb is reported separately).
# Prints one JSON line and writes it to results/bench/sandbox.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench-lib.sh
bench_test sandbox bench_provision_and_teardown_of_an_empty_sandbox sandbox
