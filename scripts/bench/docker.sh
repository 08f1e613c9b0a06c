#!/usr/bin/env bash
# Docker sandbox timings (needs root, dockerd, `make images`): create-to-ready
# and teardown of the redis image through benchcage's docker sandbox vs
# `docker run --rm` of the same image and argv (median of 7 each, the same
# 5 ms PING poll for both). Prints one JSON line and writes it to
# results/bench/docker.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench-lib.sh
bash scripts/dockerd.sh >/dev/null
make -s images >/dev/null
bench_test docker bench_redis_create_to_ready_and_teardown_vs_docker_run_rm docker
