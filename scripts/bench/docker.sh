#!/usr/bin/env bash
# Docker sandbox timings (needs root, dockerd, `make images`): create-to-ready
# and teardown of the redis image through benchcage's docker sandbox vs
# `docker run --rm` of the same image and argv (median of 7 each, the same
# 5 ms PING poll for both). Prints one JSON line and writes it to
# results/bench/docker.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/dockerd.sh >/dev/null
make -s images >/dev/null
out=$(cargo test --test docker -- --ignored --nocapture --exact \
    bench_redis_create_to_ready_and_teardown_vs_docker_run_rm 2>/dev/null | sed -n 's/^.*BENCH //p')
if [ -z "$out" ]; then
    echo "docker bench produced no result; run: cargo test --test docker -- --ignored --nocapture bench" >&2
    exit 1
fi
mkdir -p results/bench
printf '%s\n' "$out" | tee results/bench/docker.json
