#!/usr/bin/env bash
# Results site benchmark (`make bench-site`, part of `make bench`; issue 31).
#
# A year of nightly runs: 365 runs of scenarios/nightly.yaml's matrix
# (9 versions x 3 repetitions, YCSB A and C at 1 and 4 threads: 27 cells
# a night) made from copies of ONE real run of one of its cells (its
# figures scaled per version and night, run ids and dates varied),
# indexed into a history; then `benchcage site` on it, timed, in a release
# build. Target: under 10 s. Writes results/bench/site.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench-lib.sh

cargo build --release
BENCHCAGE_SITE_BIN=$(pwd)/${CARGO_TARGET_DIR:-target}/release/benchcage \
    bench_test site bench_a_year_of_nightly_runs_builds_its_site_in_seconds site
