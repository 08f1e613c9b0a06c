#!/usr/bin/env bash
# Built-in TPC-C client cost (`make bench`, tpcc section): postgres pinned to
# SERVER_CPU, `benchcage drive --workload tpcc` pinned to CLIENT_CPU, 2
# warehouses (TPCC_WAREHOUSES), TPCC_TERMINALS terminals for BENCH_SECS
# seconds. Client CPU is the drive process's user+system time (GNU time);
# server CPU is the user+system time of every postgres process over the
# run (live ones, plus the backends the postmaster reaped: /proc stat
# fields utime, stime, cutime, cstime of the server's process group).
# Prints client and server CPU seconds per NEW ORDER and their ratio
# (target: client below 15% of server) and writes results/bench/tpcc.json.
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN=${BENCHCAGE_BIN:-${CARGO_TARGET_DIR:-target}/release/benchcage}
if [ ! -x "$BIN" ]; then cargo build --release; fi
source scripts/bench-lib.sh
PG=/usr/lib/postgresql/15/bin
WAREHOUSES=${TPCC_WAREHOUSES:-2}
TERMINALS=${TPCC_TERMINALS:-8}

work=$(mktemp -d /tmp/benchcage-bench-tpcc.XXXXXX)
chmod 755 "$work"
pg_pid=
cleanup() {
    if [ -n "$pg_pid" ]; then
        kill -TERM -- "-$pg_pid" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$pg_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL -- "-$pg_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# Seconds of CPU used so far by the processes of process group $1.
group_cpu() {
    python3 - "$1" <<'PY'
import os, sys
pgid, ticks, total = int(sys.argv[1]), os.sysconf("SC_CLK_TCK"), 0
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        continue
    if int(f[2]) == pgid:
        total += sum(int(x) for x in f[11:15])
print(total / ticks)
PY
}

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/pg" && chown postgres "$work/pg"
runuser -u postgres -- "$PG/initdb" -A trust -U postgres -D "$work/pg/data" --no-sync >/dev/null
setsid taskset -c "$SERVER_CPU" runuser -u postgres -- "$PG/postgres" -D "$work/pg/data" \
    -k "$work/pg" -h 127.0.0.1 -p "$port" -c fsync=off -c shared_buffers=512MB \
    -c max_connections=200 >"$work/pg.log" 2>&1 &
pg_pid=$!
for _ in $(seq 300); do "$PG/pg_isready" -h 127.0.0.1 -p "$port" >/dev/null 2>&1 && break; sleep 0.1; done
store="postgres://postgres@127.0.0.1:$port/postgres"

echo "# loading $WAREHOUSES warehouses"
taskset -c "$CLIENT_CPU" "$BIN" drive --store "$store" --workload tpcc --warehouses "$WAREHOUSES" \
    --load --threads 4 >"$work/load.out" 2>/dev/null
grep -E '^\[OVERALL\], RunTime' "$work/load.out"

echo "# TPC-C: $TERMINALS terminals, ${SECS}s, server on CPU $SERVER_CPU, client on CPU $CLIENT_CPU"
before=$(group_cpu "$pg_pid")
/usr/bin/time -f '%U %S' -o "$work/run.time" taskset -c "$CLIENT_CPU" \
    "$BIN" drive --store "$store" --workload tpcc --warehouses "$WAREHOUSES" \
    --threads "$TERMINALS" --duration "${SECS}s" >"$work/run.out" 2>"$work/run.err" || {
    echo "tpcc run failed:" >&2; tail -20 "$work/run.out" "$work/run.err" >&2; exit 1
}
after=$(group_cpu "$pg_pid")
tpmc=$(grep -oP '\[OVERALL\], tpmC, \K[\d.]+' "$work/run.out")
new_orders=$(grep -oP '\[NEW_ORDER\], Operations, \K\d+' "$work/run.out")
client=$(awk '{print $1 + $2}' "$work/run.time")
mkdir -p results/bench
awk -v w="$WAREHOUSES" -v t="$TERMINALS" -v s="$SECS" -v tpmc="$tpmc" -v n="$new_orders" \
    -v c="$client" -v b="$before" -v a="$after" 'BEGIN {
    srv = a - b
    printf "{\"engine\":\"postgres\",\"warehouses\":%d,\"terminals\":%d,\"seconds\":%d,\"tpmC\":%.0f,\"new_orders\":%d,\"client_cpu_s\":%.2f,\"server_cpu_s\":%.2f,\"client_cpu_ms_per_new_order\":%.3f,\"server_cpu_ms_per_new_order\":%.3f,\"client_to_server\":%.3f}\n",
        w, t, s, tpmc, n, c, srv, c * 1000 / n, srv * 1000 / n, c / srv }' | tee results/bench/tpcc.json
