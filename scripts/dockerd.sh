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
  # A daemon that died (SIGKILL, a test that killed it) leaves its pid file;
  # once that pid is reused by another process dockerd refuses to start.
  pidfile=/var/run/docker.pid
  if [[ -f $pidfile ]] && [[ $(cat "/proc/$(cat "$pidfile")/comm" 2>/dev/null) != dockerd ]]; then
    echo "dockerd.sh: removing the stale $pidfile (pid $(cat "$pidfile") is not dockerd)"
    rm -f "$pidfile"
  fi
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
