# Shared by scripts/bench/*.sh (sourced, not run): run one ignored
# benchmark test that prints `BENCH {json}`, print the JSON and write it to
# results/bench/<name>.json.
# Usage: bench_test <test-file> <test-name> <name>
bench_test() {
    local file=$1 test=$2 name=$3 out
    out=$(cargo test --test "$file" -- --ignored --nocapture --exact "$test" 2>/dev/null |
        sed -n 's/^.*BENCH //p')
    if [ -z "$out" ]; then
        echo "$name bench produced no result; run: cargo test --test $file -- --ignored --nocapture $test" >&2
        return 1
    fi
    mkdir -p results/bench
    printf '%s\n' "$out" | tee "results/bench/$name.json"
}

# The pinning and sizes the client benchmarks share (workload.sh, mongodb.sh):
# server on SERVER_CPU, client on CLIENT_CPU, BENCH_SECS-second runs over
# BENCH_RECORDS records with BENCH_CONNS connections, BENCH_REPS times.
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
SECS=${BENCH_SECS:-10}
RECORDS=${BENCH_RECORDS:-100000}
CONNS=${BENCH_CONNS:-16}
REPS=${BENCH_REPS:-3}
