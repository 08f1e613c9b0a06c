#!/usr/bin/env bash
# A local Slurm cluster for `benchcage run --on slurm` and its tests:
# munged, slurmctld and two slurmd on this machine, talking over 127.0.0.1
# only. Node HOST (this machine as slurmd reads it) is partition `bench`,
# the default; node HOST-b, a second slurmd on its own port, joins it in
# partition `pair`, a two-node allocation for cells whose client runs on
# another node (`client: {node: other}`). Both nodes are this machine: a
# job on one and a step on the other share its CPUs. Idempotent, like
# scripts/dockerd.sh: a second call returns as soon as both nodes answer
# `sinfo` as idle.
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
  for f in "$pids"/slurmd*.pid "$pids/slurmctld.pid" "$pids/munged.pid"; do
    [[ -f $f ]] || continue
    local d pid
    d=$(basename "$f" .pid)
    d=${d%%-*}
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

# A cluster answers with a node up.
up() { sinfo --noheader --format=%t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; }
# Ours answers with both nodes of partition pair up.
idle() {
  [[ $(sinfo --noheader --Node --partition=pair --format=%t 2>/dev/null | grep -cE '^(idle|mix|alloc)') -eq 2 ]]
}

if command -v sinfo >/dev/null && { idle || { ! ours && up; }; }; then
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

mkdir -p "$state/ctld" "$state/spool-$(hostname -s)" "$state/spool-$(hostname -s)-b" "$pids" "$log"
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
SlurmdSpoolDir=$state/spool-%n
SlurmctldPidFile=$pids/slurmctld.pid
SlurmdPidFile=$pids/slurmd-%n.pid
SlurmctldLogFile=$log/slurmctld.log
SlurmdLogFile=$log/slurmd-%n.log
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
$node NodeAddr=127.0.0.1 Port=6818 State=UNKNOWN
${node/NodeName=$host /NodeName=$host-b } NodeAddr=127.0.0.1 Port=6828 State=UNKNOWN
PartitionName=bench Nodes=$host Default=YES MaxTime=INFINITE State=UP
PartitionName=pair Nodes=$host,$host-b MaxTime=INFINITE State=UP
EOF
# A controller started on another config (an older one-node cluster of
# this script's) reads the new one only when it starts.
if ! cmp -s "$conf.tmp" "$conf"; then
  mv "$conf.tmp" "$conf"
  for d in slurmd slurmctld; do pkill -x "$d" 2>/dev/null || true; done
  for ((i = 0; i < 100; i++)); do
    pgrep -x slurmd >/dev/null || pgrep -x slurmctld >/dev/null || break
    sleep 0.1
  done
else
  rm -f "$conf.tmp"
fi

# munge: its key comes with the package; its socket folder is made here
# (no systemd to make it).
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
if ! pgrep -x munged >/dev/null; then
  # A pid file left by a munged that died (or a machine restored from a
  # snapshot) would be read below as the new daemon's.
  rm -f /run/munge/munged.pid
  runuser -u munge -- munged
  # munged forks: its own pid file names the daemon.
  for ((i = 0; i < 50; i++)); do
    [[ -s /run/munge/munged.pid ]] && break
    sleep 0.1
  done
  cp /run/munge/munged.pid "$pids/munged.pid"
fi

start() {
  local d=$1 name=${2:-}
  if [[ -z $name ]]; then
    pgrep -x "$d" >/dev/null && return
  else
    pgrep -xf "$d -N $name" >/dev/null && return
  fi
  echo "slurm.sh: starting $d ${name:+for node $name }(log: $log/)"
  # Close every inherited descriptor above stderr first: the daemon lives
  # on and would hold what it inherited (a caller's pipe, a test's flock).
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    setsid "$d" ${name:+-N "$name"} </dev/null >>"$log/$d${name:+-$name}.out" 2>&1
  )
}
start slurmctld
start slurmd "$host"
start slurmd "$host-b"

for ((i = 0; i < timeout_s * 10; i++)); do
  if idle; then
    echo "slurm.sh: cluster up ($(sinfo --noheader --format='%P %D node(s) %c CPUs %m MB %t' | tr '\n' ';'))"
    exit 0
  fi
  # A node left down by an earlier stop comes back.
  if sinfo --noheader --format=%t 2>/dev/null | grep -qE '^(down|drain)'; then
    scontrol update NodeName="$host,$host-b" State=RESUME >/dev/null 2>&1 || true
  fi
  sleep 0.1
done
echo "slurm.sh: the node did not come up within ${timeout_s}s; last log lines:" >&2
tail -n 20 "$log/slurmctld.log" "$log/slurmd-$host.log" "$log/slurmd-$host-b.log" >&2 || true
exit 1
