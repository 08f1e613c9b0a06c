#!/usr/bin/env bash
# Load generator benchmark (`make bench`, workload section).
#
# The server is pinned to CPU 0 and the client to CPU 1, with the same
# number of connections on both sides. For each engine, benchcage and the
# native tool do the same work: workload C's point read of one record
# (10 fields x 100 bytes, uniform keys over the same loaded table):
#   redis:    benchcage HGETALL   vs redis-benchmark HGETALL user<12 digits>
#   postgres: benchcage prepared  vs pgbench -M prepared custom script
#   mariadb:  benchcage prepared  vs sysbench Lua script, prepared statement
# Client CPU is the user+system time of the client process (getrusage of
# the child, via GNU time). Also: the null store (generator + histograms).
# Each pair runs BENCH_REPS times (default 3), alternating which side goes
# first; the medians of ops/s and of CPU per operation are compared.
# Prints a table and writes results/bench/workload.json.
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN=${BENCHCAGE_BIN:-${CARGO_TARGET_DIR:-target}/release/benchcage}
if [ ! -x "$BIN" ]; then cargo build --release; fi
source scripts/bench-lib.sh
PG=/usr/lib/postgresql/15/bin

work=$(mktemp -d /tmp/benchcage-bench.XXXXXX)
chmod 755 "$work" # postgres runs as its own user and must reach its data dir
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do
        for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL -- "-$p" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() { # start NAME CMD...: in its own process group, pinned to the server CPU
    local name=$1; shift
    setsid taskset -c "$SERVER_CPU" "$@" >"$work/$name.log" 2>&1 &
    pids+=($!)
}
wait_for() { # wait_for CMD...: until it succeeds (30 s)
    for _ in $(seq 300); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
    echo "not ready: $*" >&2; exit 1
}
# measure NAME OPS_REGEX CMD...: runs CMD on the client CPU; prints "ops_per_s cpu_s"
measure() {
    local name=$1 re=$2; shift 2
    /usr/bin/time -f '%U %S' -o "$work/$name.time" taskset -c "$CLIENT_CPU" "$@" >"$work/$name.out" 2>"$work/$name.err" || {
        echo "$name failed:" >&2; tail -20 "$work/$name.out" "$work/$name.err" >&2; exit 1
    }
    local ops cpu
    ops=$(grep -oP "$re" "$work/$name.out" | tail -1)
    cpu=$(awk '{print $1 + $2}' "$work/$name.time")
    echo "$ops $cpu"
}
DRIVE=("$BIN" drive --records "$RECORDS" --insert-order ordered --key-padding 12)

rows=()
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# compare ENGINE PEER OURS_FN PEER_FN: each FN prints "ops_per_s cpu_us_per_op";
# runs both REPS times, alternating the order, and records the medians.
compare() {
    local engine=$1 peer=$2 ours_fn=$3 peer_fn=$4 i o=() oc=() p=() pc=()
    for i in $(seq "$REPS"); do
        local a b
        if ((i % 2)); then a=$($ours_fn); b=$($peer_fn); else b=$($peer_fn); a=$($ours_fn); fi
        o+=("${a% *}"); oc+=("${a#* }"); p+=("${b% *}"); pc+=("${b#* }")
        echo "  run $i: benchcage ${a% *} ops/s ${a#* } us/op, $peer ${b% *} ops/s ${b#* } us/op" >&2
    done
    local mo moc mp mpc line
    mo=$(printf '%s\n' "${o[@]}" | median); moc=$(printf '%s\n' "${oc[@]}" | median)
    mp=$(printf '%s\n' "${p[@]}" | median); mpc=$(printf '%s\n' "${pc[@]}" | median)
    line=$(awk -v e="$engine" -v o="$mo" -v ou="$moc" -v p="$peer" -v po="$mp" -v pu="$mpc" -v r="$REPS" 'BEGIN {
        printf "{\"engine\":\"%s\",\"runs\":%d,\"benchcage_ops_s\":%.0f,\"benchcage_cpu_us_op\":%.2f,\"peer\":\"%s\",\"peer_ops_s\":%.0f,\"peer_cpu_us_op\":%.2f,\"ops_ratio\":%.3f,\"cpu_ratio\":%.3f}",
            e, r, o, ou, p, po, pu, o / po, ou / pu }')
    rows+=("$line")
    echo "$line"
}
# ours NAME STORE_URL: benchcage's workload C point reads against the store
ours() {
    local o c
    read -r o c < <(measure "bc-$1" '\[OVERALL\], Throughput\(ops/sec\), \K[\d.]+' \
        "${DRIVE[@]}" --store "$2" --workload c --distribution uniform \
        --threads "$CONNS" --duration "${SECS}s")
    per_op "$o" "$c"
}
# per_op OPS CPU_S: prints "OPS cpu_us_per_op" for a SECS-long run
per_op() { awk -v o="$1" -v c="$2" -v s="$SECS" 'BEGIN { printf "%s %.3f\n", o, c * 1e6 / (o * s) }'; }

echo "# null store: generator + histograms, 1 thread on CPU $CLIENT_CPU"
null_ops=50000000
/usr/bin/time -f '%U %S' -o "$work/null.time" taskset -c "$CLIENT_CPU" \
    "$BIN" drive --store null:// --workload c --records 1000000 --operations $null_ops --threads 1 \
    >"$work/null.out" 2>/dev/null
null_tput=$(grep -oP '\[OVERALL\], Throughput\(ops/sec\), \K[\d.]+' "$work/null.out")
null_cpu=$(awk '{print $1 + $2}' "$work/null.time")
null_line=$(awk -v t="$null_tput" -v c="$null_cpu" -v n="$null_ops" 'BEGIN {
    printf "{\"engine\":\"null\",\"benchcage_ops_s\":%.0f,\"benchcage_cpu_ns_op\":%.1f}", t, c * 1e9 / n }')
echo "$null_line"

echo "# redis: HGETALL of one 10-field record, $CONNS connections, ${SECS}s"
rport=$(free_port)
start redis redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work"
wait_for redis-cli -p "$rport" ping
"${DRIVE[@]}" --store "redis://127.0.0.1:$rport" --workload c --load --operations 1 >/dev/null 2>&1
ours_redis() { ours redis "redis://127.0.0.1:$rport"; }
# redis-benchmark takes a request count, not a duration: about SECS seconds'
# worth at the rate of a first short run.
rb=(redis-benchmark -h 127.0.0.1 -p "$rport" -c "$CONNS" -r "$RECORDS" -q)
read -r probe_tput _ < <(measure redis-probe '\K[\d.]+(?= requests per second)' "${rb[@]}" -n 100000 HGETALL user__rand_int__)
peer_n=$(awk -v t="$probe_tput" -v s="$SECS" 'BEGIN { printf "%.0f", t * s }')
peer_redis() {
    local t c
    read -r t c < <(measure redis-benchmark '\K[\d.]+(?= requests per second)' "${rb[@]}" -n "$peer_n" HGETALL user__rand_int__)
    awk -v t="$t" -v c="$c" -v n="$peer_n" 'BEGIN { printf "%s %.3f\n", t, c * 1e6 / n }'
}
compare redis redis-benchmark ours_redis peer_redis

echo "# postgres: point read by primary key, $CONNS connections, ${SECS}s"
pport=$(free_port)
mkdir -p "$work/pg" && chown postgres "$work/pg"
runuser -u postgres -- "$PG/initdb" -A trust -U postgres -D "$work/pg/data" --no-sync >/dev/null
start pg runuser -u postgres -- "$PG/postgres" -D "$work/pg/data" -k "$work/pg" -h 127.0.0.1 -p "$pport" \
    -c fsync=off -c shared_buffers=256MB -c max_connections=200
wait_for "$PG/pg_isready" -h 127.0.0.1 -p "$pport"
"${DRIVE[@]}" --store "postgres://postgres@127.0.0.1:$pport/postgres" --workload c --load --operations 1 --threads 4 >/dev/null 2>&1
ours_pg() { ours pg "postgres://postgres@127.0.0.1:$pport/postgres"; }
cat >"$work/point-read.sql" <<SQL
\set id random(0, $((RECORDS - 1)))
SELECT * FROM usertable WHERE ycsb_key = 'user' || lpad(:id::text, 12, '0');
SQL
peer_pg() {
    local t c
    read -r t c < <(measure pgbench 'tps = \K[\d.]+' \
        pgbench -n -M prepared -c "$CONNS" -j 1 -T "$SECS" -f "$work/point-read.sql" \
        -h 127.0.0.1 -p "$pport" -U postgres postgres)
    per_op "$t" "$c"
}
compare postgres pgbench ours_pg peer_pg

echo "# mariadb: point read by primary key, $CONNS connections, ${SECS}s"
mport=$(free_port)
mariadb-install-db --no-defaults --user=root --skip-test-db --datadir="$work/my" \
    --auth-root-authentication-method=normal >/dev/null 2>&1
start my mariadbd --no-defaults --user=root --bind-address=127.0.0.1 --port="$mport" \
    --datadir="$work/my" --socket="$work/my.sock" --pid-file="$work/my.pid" --skip-log-bin \
    --innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=0 --max-connections=200
wait_for mariadb --no-defaults -h 127.0.0.1 -P "$mport" -uroot -e 'select 1'
"${DRIVE[@]}" --store "mysql://root@127.0.0.1:$mport/ycsb" --workload c --load --operations 1 --threads 4 >/dev/null 2>&1
ours_my() { ours my "mysql://root@127.0.0.1:$mport/ycsb"; }
cat >"$work/point-read.lua" <<LUA
function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  stmt = con:prepare("SELECT * FROM usertable WHERE ycsb_key = ?")
  key = stmt:bind_create(sysbench.sql.type.VARCHAR, 64)
  stmt:bind_param(key)
end
function event()
  key:set(string.format("user%012d", sysbench.rand.uniform(0, $((RECORDS - 1)))))
  local rs = stmt:execute()
  if rs then rs:free() end
end
function thread_done() stmt:close(); con:disconnect() end
LUA
peer_my() {
    local t c
    read -r t c < <(measure sysbench 'transactions:\s+\d+\s+\(\K[\d.]+' \
        sysbench "$work/point-read.lua" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$mport" \
        --mysql-user=root --mysql-db=ycsb --threads="$CONNS" --time="$SECS" run)
    per_op "$t" "$c"
}
compare mariadb sysbench ours_my peer_my

mkdir -p results/bench
{
    printf '{"seconds":%s,"records":%s,"connections":%s,"runs":%s,"null":%s,"engines":[' "$SECS" "$RECORDS" "$CONNS" "$REPS" "$null_line"
    (IFS=,; printf '%s' "${rows[*]}")
    printf ']}\n'
} | tee results/bench/workload.json
