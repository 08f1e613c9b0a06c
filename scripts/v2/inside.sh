#!/bin/bash
# Runs inside the cgroup v2 guest: as PID 1 (the plain configuration, no
# init system) or as systemd's boot service (`inside.sh systemd`). Runs the
# suites listed in the output share's `plan` file, one log, exit code and
# duration per suite, then `benchcage doctor`, then powers the guest off.
set -u
mode=${1:-plain}
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
if [ $$ = 1 ]; then
  mount -t proc proc /proc
  mount -t sysfs sysfs /sys
  mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
  mkdir -p /dev/pts /dev/shm
  mount -t devpts devpts /dev/pts
  mount -t tmpfs tmpfs /dev/shm
fi
out=$(sed -n 's/.*\bbc\.out=\([^ ]*\).*/\1/p' /proc/cmdline)
# shellcheck disable=SC1091
. "$out/env"
export PATH
repo=$(sed -n 's/.*\bbc\.repo=\([^ ]*\).*/\1/p' /proc/cmdline)
ip link set lo up
hostname benchcage-v2
echo "guest($mode): up after $(cut -d' ' -f1 /proc/uptime)s; cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
mount | grep -c ' type cgroup ' | sed 's/^/guest: v1 cgroup mounts: /'
cd "$repo"
# A swap file, so that a nonzero memory.swap.max has something to use.
if fallocate -l 512M /tmp/v2.swap && chmod 600 /tmp/v2.swap && mkswap -q /tmp/v2.swap && swapon /tmp/v2.swap; then
  echo "guest: swap $(awk 'NR > 1 { print $1, $3 " KiB" }' /proc/swaps)"
else
  echo "guest: no swap file"
fi
# Here the v2 tests must run: none may skip for want of v2 (or systemd).
export BENCHCAGE_REQUIRE_V2=1
if [ "$mode" = systemd ]; then export BENCHCAGE_REQUIRE_SYSTEMD=1; fi
# In the systemd guest every suite runs in its own delegated scope, as a
# user would start benchcage there; the service itself is not delegated.
wrap=()
if [ "$mode" = systemd ]; then
  wrap=(systemd-run --scope -p Delegate=yes --quiet --collect --)
fi
while read -r name exe args; do
  [ -n "$name" ] || continue
  start=$EPOCHREALTIME
  # shellcheck disable=SC2086
  timeout 300 "${wrap[@]}" "$exe" $args >"$out/$name.log" 2>&1
  echo $? >"$out/$name.rc"
  awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", b - a }' >"$out/$name.secs"
  echo "guest: $name exit $(cat "$out/$name.rc") after $(cat "$out/$name.secs")s"
done <"$out/plan"
# doctor from where a user would run it (not delegated on the systemd guest)
bin=$(sed -n 's/.*\bbc\.bin=\([^ ]*\).*/\1/p' /proc/cmdline)
"$bin" doctor >"$out/doctor.log" 2>&1
echo $? >"$out/doctor.rc"
if [ "$mode" = systemd ]; then
  "${wrap[@]}" "$bin" doctor >"$out/doctor-delegated.log" 2>&1
  echo $? >"$out/doctor-delegated.rc"
fi
echo "guest: done after $(cut -d' ' -f1 /proc/uptime)s"
sync
echo o >/proc/sysrq-trigger
# The power-off is asynchronous: PID 1 exiting first would panic the kernel.
sleep 60
