#!/usr/bin/env bash
# A local one-node Slurm cluster for `benchcage run --on slurm` and its
# tests: munged, slurmctld and slurmd on this machine, talking over
# 127.0.0.1 only. Idempotent, like scripts/dockerd.sh: a second call returns
# as soon as the node answers `sinfo` as idle.
#
#   bash scripts/slurm.sh          install (Debian slurm-wlm, munge), start
#   bash scripts/slurm.sh stop     stop the daemons this script started
#
# It writes /etc/slurm/slurm.conf only when there is none, or when the one
# there is its own (first line below); a real cluster's config is never
# touched: the script then only checks that the cluster answers.
set -euo pipefail

marker="# written by benchcage scripts/slurm.sh"
conf=/etc/slurm/slurm.conf
state=/var/lib/benchcage-slurm
pids=/run/benchcage-slurm
log=/var/log/benchcage-slurm
timeout_s=${SLURM_TIMEOUT:-60}

ours() { [[ -f $conf ]] && [[ $(head -n 1 "$conf") == "$marker" ]]; }

stop() {
  for d in slurmd slurmctld munged; do
    local f="$pids/$d.pid"
    [[ -f $f ]] || continue
    local pid
    pid=$(cat "$f")
    if [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$d" ]]; then
      kill "$pid" 2>/dev/null || true
      for ((i = 0; i < 100; i++)); do
        [[ -d /proc/$pid ]] || break
        sleep 0.1
      done
      kill -9 "$pid" 2>/dev/null || true
      echo "slurm.sh: stopped $d (pid $pid)"
    fi
    rm -f "$f"
  done
}

if [[ ${1:-} == stop ]]; then
  stop
  exit 0
fi

idle() { sinfo --noheader --format=%t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; }

if command -v sinfo >/dev/null && idle; then
  exit 0
fi

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "slurm.sh: installing Debian's slurm-wlm and munge"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    slurm-wlm slurm-client munge >/dev/null
fi

if [[ -f $conf ]] && ! ours; then
  echo "slurm.sh: $conf is not ours (a real cluster's?); not touching it, and its cluster does not answer \`sinfo\` as idle" >&2
  exit 1
fi

mkdir -p "$state/ctld" "$state/spool" "$pids" "$log"
# Nodes: this machine only, as slurmd reads it, addressed on loopback.
node=$(slurmd -C | head -n 1)
host=$(hostname -s)
cat >"$conf.tmp" <<EOF
$marker
ClusterName=benchcage
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$pids/slurmctld.pid
SlurmdPidFile=$pids/slurmd.pid
SlurmctldLogFile=$log/slurmctld.log
SlurmdLogFile=$log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
# Finished jobs stay visible to squeue --states=all for 10 minutes.
MinJobAge=600
KillWait=30
# A dead slurmd's node goes down (and its jobs NODE_FAIL) after 30 s, not
# Slurm's default 300: tests/slurm.rs kills slurmd under a running job.
SlurmdTimeout=30
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=bench Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
mv "$conf.tmp" "$conf"

# munge: its key comes with the package; its socket folder is made here
# (no systemd to make it).
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
if ! pgrep -x munged >/dev/null; then
  runuser -u munge -- munged
  # munged forks: its own pid file names the daemon.
  for ((i = 0; i < 50; i++)); do
    [[ -s /run/munge/munged.pid ]] && break
    sleep 0.1
  done
  cp /run/munge/munged.pid "$pids/munged.pid"
fi

start() {
  local d=$1
  if pgrep -x "$d" >/dev/null; then return; fi
  echo "slurm.sh: starting $d (log: $log/$d.log)"
  # Close every inherited descriptor above stderr first: the daemon lives
  # on and would hold what it inherited (a caller's pipe, a test's flock).
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    setsid "$d" </dev/null >>"$log/$d.out" 2>&1
  )
}
start slurmctld
start slurmd

for ((i = 0; i < timeout_s * 10; i++)); do
  if idle; then
    scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true
    echo "slurm.sh: one-node cluster up ($(sinfo --noheader --format='%P %D node(s) %c CPUs %m MB %t' | head -n 1))"
    exit 0
  fi
  # A node left down by an earlier stop comes back.
  if sinfo --noheader --format=%t 2>/dev/null | grep -qE '^(down|drain)'; then
    scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true
  fi
  sleep 0.1
done
echo "slurm.sh: the node did not come up within ${timeout_s}s; last log lines:" >&2
tail -n 20 "$log/slurmctld.log" "$log/slurmd.log" >&2 || true
exit 1
