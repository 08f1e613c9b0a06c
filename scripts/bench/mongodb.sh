#!/usr/bin/env bash
# MongoDB client benchmark (`make bench`, mongodb section).
#
# benchcage's MongoDB wire client (src/clients/mongodb/) against
# SecantusDB, YCSB workloads C (100% read) and A (50/50 read/update),
# uniform keys over the same loaded collection, BENCH_CONNS (default 16)
# connections. The server is pinned to CPU 0 and the client to CPU 1, as
# scripts/bench/workload.sh pins them. Client CPU is the user+system time
# of the client process (GNU time).
#
# BENCHCAGE_BIN is the binary measured (default: the release build).
# BENCHCAGE_OLD_BIN, when set, is a baseline binary measured the same way
# on the same data, runs alternating which goes first (BENCH_REPS, default
# 3); the medians give the ratios new/old of ops/s and of CPU per operation.
# The store based on the `mongodb` crate is commit e52cea0:
#   git worktree add /tmp/old e52cea0 && (cd /tmp/old && cargo build --release)
#   BENCHCAGE_OLD_BIN=/tmp/old/target/release/benchcage bash scripts/bench/mongodb.sh
# Prints a table and writes results/bench/mongodb.json.
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN=${BENCHCAGE_BIN:-${CARGO_TARGET_DIR:-target}/release/benchcage}
if [ ! -x "$BIN" ]; then cargo build --release; fi
OLD=${BENCHCAGE_OLD_BIN:-}
if [ -n "$OLD" ] && [ ! -x "$OLD" ]; then
    echo "BENCHCAGE_OLD_BIN=$OLD is not an executable" >&2
    exit 2
fi
source scripts/bench-lib.sh
command -v secantusd-py >/dev/null || { echo "secantusd-py missing: run \`make deps\`" >&2; exit 1; }

work=$(mktemp -d /tmp/benchcage-bench-mongo.XXXXXX)
server=
cleanup() {
    if [ -n "$server" ]; then
        kill -TERM -- "-$server" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
        kill -KILL -- "-$server" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
setsid taskset -c "$SERVER_CPU" secantusd-py --host 127.0.0.1 --port "$port" \
    --storage-path "$work/data" --log-level WARNING >"$work/server.log" 2>&1 &
server=$!
URL="mongodb://127.0.0.1:$port"
DRIVE=(drive --store "$URL" --records "$RECORDS" --insert-order ordered --key-padding 12)
for i in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    kill -0 "$server" 2>/dev/null && ((i < 300)) || { echo "secantusd-py did not start:" >&2; tail -20 "$work/server.log" >&2; exit 1; }
    sleep 0.1
done
echo "# loading $RECORDS records into SecantusDB (CPU $SERVER_CPU)"
"$BIN" "${DRIVE[@]}" --workload c --load --reset --operations 1 --threads 4 >/dev/null 2>"$work/load.err" || {
    echo "load failed:" >&2; tail -20 "$work/load.err" >&2; exit 1
}

# run BIN WORKLOAD NAME: prints "ops_per_s cpu_us_per_op"
run() {
    local bin=$1 wl=$2 name=$3 ops cpu errors
    /usr/bin/time -f '%U %S' -o "$work/$name.time" taskset -c "$CLIENT_CPU" \
        "$bin" "${DRIVE[@]}" --workload "$wl" --distribution uniform \
        --threads "$CONNS" --duration "${SECS}s" >"$work/$name.out" 2>"$work/$name.err" || {
        echo "$name failed:" >&2; tail -20 "$work/$name.out" "$work/$name.err" >&2; exit 1
    }
    ops=$(grep -oP '\[OVERALL\], Throughput\(ops/sec\), \K[\d.]+' "$work/$name.out" | tail -1)
    errors=$(grep -oP '\[\w+-FAILED\], Operations, \K\d+' "$work/$name.out" | awk '{ n += $1 } END { print n + 0 }')
    if [ "$errors" != 0 ]; then
        echo "$name: $errors failed operations" >&2; exit 1
    fi
    cpu=$(awk '{print $1 + $2}' "$work/$name.time")
    awk -v o="$ops" -v c="$cpu" -v s="$SECS" 'BEGIN { printf "%s %.3f\n", o, c * 1e6 / (o * s) }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

rows=()
for wl in c a; do
    echo "# workload $wl: $CONNS connections, ${SECS}s, uniform keys"
    n=() nc=() o=() oc=()
    for i in $(seq "$REPS"); do
        if [ -z "$OLD" ]; then
            a=$(run "$BIN" "$wl" "new-$wl-$i")
            n+=("${a% *}"); nc+=("${a#* }")
            echo "  run $i: ${a% *} ops/s ${a#* } us/op" >&2
            continue
        fi
        if ((i % 2)); then
            a=$(run "$BIN" "$wl" "new-$wl-$i"); b=$(run "$OLD" "$wl" "old-$wl-$i")
        else
            b=$(run "$OLD" "$wl" "old-$wl-$i"); a=$(run "$BIN" "$wl" "new-$wl-$i")
        fi
        n+=("${a% *}"); nc+=("${a#* }"); o+=("${b% *}"); oc+=("${b#* }")
        echo "  run $i: new ${a% *} ops/s ${a#* } us/op, old ${b% *} ops/s ${b#* } us/op" >&2
    done
    mn=$(printf '%s\n' "${n[@]}" | median); mnc=$(printf '%s\n' "${nc[@]}" | median)
    if [ -z "$OLD" ]; then
        line=$(awk -v w="$wl" -v r="$REPS" -v o="$mn" -v c="$mnc" 'BEGIN {
            printf "{\"workload\":\"%s\",\"runs\":%d,\"ops_s\":%.0f,\"cpu_us_op\":%.2f}", w, r, o, c }')
    else
        mo=$(printf '%s\n' "${o[@]}" | median); moc=$(printf '%s\n' "${oc[@]}" | median)
        line=$(awk -v w="$wl" -v r="$REPS" -v o="$mn" -v c="$mnc" -v po="$mo" -v pc="$moc" 'BEGIN {
            printf "{\"workload\":\"%s\",\"runs\":%d,\"ops_s\":%.0f,\"cpu_us_op\":%.2f,\"old_ops_s\":%.0f,\"old_cpu_us_op\":%.2f,\"ops_ratio\":%.3f,\"cpu_ratio\":%.3f}",
                w, r, o, c, po, pc, o / po, c / pc }')
    fi
    rows+=("$line")
    echo "$line"
done

mkdir -p results/bench
{
    printf '{"server":"secantusdb","seconds":%s,"records":%s,"connections":%s,"runs":%s,"old_bin":"%s","workloads":[' \
        "$SECS" "$RECORDS" "$CONNS" "$REPS" "$OLD"
    (IFS=,; printf '%s' "${rows[*]}")
    printf ']}\n'
} | tee results/bench/mongodb.json
