#!/usr/bin/env bash
# Starts Debian's dockerd in the background with host networking only
# (no bridge, no iptables rules) unless a daemon already answers on the socket.
# Idempotent: a second call returns as soon as the daemon answers.
set -euo pipefail

sock=/var/run/docker.sock
log=/var/log/benchcage-dockerd.log
timeout_s=${DOCKERD_TIMEOUT:-60}

answers() { docker -H "unix://$sock" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

if answers; then
  exit 0
fi
if ! command -v dockerd >/dev/null; then
  echo "dockerd.sh: dockerd not found; run \`make deps\` (Debian package docker.io)" >&2
  exit 1
fi
if ! pgrep -x dockerd >/dev/null; then
  # A daemon that died (SIGKILL, a machine restored from a snapshot) leaves
  # its pid files behind. Once such a pid is reused by another process:
  # - dockerd.pid: dockerd refuses to start;
  # - containerd.pid (its managed containerd): dockerd says "containerd is
  #   still running", waits for a socket nobody serves and gives up after
  #   a minute ("timeout waiting for containerd to start").
  # A pid file whose process is not the program it names is removed.
  drop_stale_pidfile() { # FILE PROGRAM
    local file=$1 program=$2 pid
    [[ -f $file ]] || return 0
    pid=$(cat "$file" 2>/dev/null || true)
    if [[ $(cat "/proc/$pid/comm" 2>/dev/null) != "$program" ]]; then
      echo "dockerd.sh: removing the stale $file (pid $pid is not $program)"
      rm -f "$file"
    fi
  }
  drop_stale_pidfile /var/run/docker.pid dockerd
  drop_stale_pidfile /var/run/docker/containerd/containerd.pid containerd
  echo "dockerd.sh: starting dockerd --bridge=none --iptables=false (log: $log)"
  # Close every inherited descriptor above stderr first: the daemon lives on,
  # and would hold whatever it inherited (a test suite's flock, a pipe that a
  # caller waits on to close) for as long as it runs.
  for fd in /proc/$$/fd/*; do
    fd=${fd##*/}
    if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
  # setsid: the daemon outlives this script and the CI step's process group.
  setsid dockerd --bridge=none --iptables=false --ip6tables=false >>"$log" 2>&1 </dev/null &
fi
for ((i = 0; i < timeout_s * 10; i++)); do
  if answers; then
    echo "dockerd.sh: dockerd $(docker version --format '{{.Server.Version}}') is up"
    exit 0
  fi
  sleep 0.1
done
echo "dockerd.sh: dockerd did not answer on $sock within ${timeout_s}s; last log lines:" >&2
tail -n 20 "$log" >&2 || true
exit 1
