#!/usr/bin/env bash
# `make test-v2`: the cgroup sandbox on a cgroup-v2-only kernel. Boots
# Debian's own kernel under qemu (TCG) twice, with the host's files shared
# read-only over 9p: once with the test script as PID 1, once with systemd
# as PID 1. Runs the sandbox and run suites inside (built here), prints
# their results as this host's own `test result:` lines, exits 1 if any
# failed. Needs root; installs qemu, busybox and the kernel package's files
# (extracted into a cache, the host's boot is not touched).
#
# BENCHCAGE_V2_MODES=plain|systemd runs one guest, BENCHCAGE_V2_ONLY=REGEX
# only the tests it matches, BENCHCAGE_V2_TIMEOUT the seconds a guest may
# take (600), BENCHCAGE_V2_BOOT_WAIT the seconds it may take to come up
# before it is booted once more (180), BENCHCAGE_V2_PLAN=FILE a plan of its own (`name exe args...`
# per line). The console is in $target/v2/console-<mode>.log, each test's
# log in $target/v2/out-<mode>/.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
cache=${BENCHCAGE_V2_CACHE:-/var/cache/benchcage/v2}
target=${CARGO_TARGET_DIR:-$repo/target}
work=$target/v2
modes=${BENCHCAGE_V2_MODES:-plain systemd}
mem=${BENCHCAGE_V2_MEM:-3072}
boot_wait=${BENCHCAGE_V2_BOOT_WAIT:-180}

need=()
for p in qemu-system-x86 busybox-static e2fsprogs xz-utils systemd; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
  echo "test-v2: installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# The kernel: the package linux-image-amd64 points at, unpacked into the cache.
kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: \(linux-image-[0-9].*\)/\1/p' | head -1)
if [ -z "$kpkg" ]; then
  apt-get update -qq
  kpkg=$(apt-cache depends linux-image-amd64 | sed -n 's/.*Depends: \(linux-image-[0-9].*\)/\1/p' | head -1)
fi
kver=${kpkg#linux-image-}
kdir=$cache/$kpkg
if [ ! -f "$kdir/done" ]; then
  echo "test-v2: fetching $kpkg"
  rm -rf "$kdir" && mkdir -p "$kdir"
  (cd "$kdir" && apt-get download -q "$kpkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
  dpkg-deb -x "$kdir"/*.deb "$kdir/root"
  rm -f "$kdir"/*.deb
  busybox depmod -b "$kdir/root" "$kver"
  # Decompressing the xz bzImage under TCG takes 20 s: boot the ELF inside
  # it instead (the kernel has a PVH entry point qemu starts directly).
  vmlinuz=$kdir/root/boot/vmlinuz-$kver
  off=$(grep -abo $'\xfd7zXZ\x00' "$vmlinuz" | head -1 | cut -d: -f1)
  tail -c +$((off + 1)) "$vmlinuz" | xz -dc >"$kdir/vmlinux" 2>/dev/null || true
  touch "$kdir/done"
fi

# The initramfs: busybox, our init, the modules the root mount needs, and
# the qdiscs of the kernel emulation of a network (netem, tbf).
mkdir -p "$work"
initrd=$work/initrd-$kver.gz
if [ ! -f "$initrd" ] || [ scripts/v2/init -nt "$initrd" ] || [ scripts/v2/test.sh -nt "$initrd" ]; then
  stage=$(mktemp -d)
  mkdir -p "$stage"/{bin,proc,sys,dev,lib/modules/$kver}
  cp /bin/busybox "$stage/bin/busybox"
  cp scripts/v2/init "$stage/init"
  mods=$kdir/root/lib/modules/$kver
  want="crc32c_generic virtio_pci virtio_blk 9pnet_virtio 9p overlay ext4 sch_netem sch_tbf"
  closure() {
    local line
    line=$(grep -E "/$1\.ko:" "$mods/modules.dep")
    echo "${line%%:*}"
    for d in ${line#*:}; do closure "$(basename "$d" .ko)"; done
  }
  for m in $want; do closure "$m"; done | sort -u | while read -r f; do
    mkdir -p "$stage/lib/modules/$kver/$(dirname "$f")"
    cp "$mods/$f" "$stage/lib/modules/$kver/$f"
  done
  busybox depmod -b "$stage" "$kver"
  (cd "$stage" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$initrd"
  rm -rf "$stage"
fi

# What runs inside: this tree's test binaries, benchcage and the tests'
# sandbox_hold fixture (an example), built here.
cargo build -q --bins --example sandbox_hold
exes=$(cargo test --no-run --test sandbox --test run --test network 2>&1 | sed -n 's/.*Executable tests\/\([a-z_]*\)\.rs (\(.*\))/\1 \2/p')
bin=$target/debug/benchcage
# What each guest runs, as extended regexes over `suite.test`. Everything
# takes 10 to 50 times longer under TCG, a `benchcage run` one to two
# minutes: the plain guest runs the whole sandbox suite, the end-to-end
# run and the kernel emulation of a 1 ms network (netem, which the v1
# host's kernel lacks); the systemd guest what depends on where the groups live (the
# delegated scope, cleanup across scopes, the v2 controllers) and a killed
# run's cleanup. The rest of the run suite (the same code above the
# sandbox), MariaDB and the sweeps run on the v1 host in `make test`.
declare -A want=(
  [plain]='^sandbox\.|^run\.a_small_scenario_|^network\.a_kernel_delay_'
  [systemd]='^sandbox\.|^run\.cleanup_marks_a_killed_run_'
)
declare -A leave=(
  [plain]='mariadb|under_systemd_'
  [systemd]='mariadb|five_hundred|postgres_runs_as|hog_that_cannot_start|a_state_dir_that_others'
)

# The guest's results as this host's own libtest lines, one block per suite.
summarize() {
  local mode=$1 out=$2 rc=0 suite
  for suite in $(sed 's/\..*//' "$out/plan" | sort -u); do
    local passed=0 failed=0 secs=0 name code
    echo "running $(grep -c "^$suite\." "$out/plan") tests ($suite suite in the $mode v2 guest)"
    while read -r name _; do
      [ "${name%%.*}" = "$suite" ] || continue
      code=$(cat "$out/$name.rc" 2>/dev/null || echo none)
      t=$(cat "$out/$name.secs" 2>/dev/null || echo 0)
      secs=$(awk -v a="$secs" -v b="$t" 'BEGIN { print a + b }')
      if [ "$code" = 0 ] && grep -q '^test result: ok. 1 passed' "$out/$name.log"; then
        passed=$((passed + 1))
        echo "test ${name#*.} ... ok (${t}s)"
      else
        failed=$((failed + 1))
        echo "test ${name#*.} ... FAILED (exit $code, ${t}s)"
        sed 's/^/    /' "$out/$name.log" 2>/dev/null | tail -40
      fi
    done <"$out/plan"
    if ((failed)); then rc=1; fi
    echo "test result: $( ((failed)) && echo FAILED || echo ok). $passed passed; $failed failed; 0 ignored; 0 measured; 0 filtered out; finished in ${secs}s"
  done
  for d in "$out"/doctor*.log; do
    [ -e "$d" ] || continue
    echo "---- $(basename "$d" .log) in the $mode v2 guest"
    cat "$d"
  done
  if [ ! -e "$out/doctor.rc" ]; then
    echo "test-v2: the $mode guest did not finish (see $work/console-$mode.log)"
    rc=1
  fi
  return $rc
}

guest= disk=
# timeout(1) passes the TERM on to qemu.
stop_guest() {
  if [ -n "$guest" ]; then kill "$guest" 2>/dev/null || true; fi
  if [ -n "$disk" ]; then rm -f "$disk"; fi
}
trap stop_guest EXIT
trap 'exit 130' INT TERM HUP

status=0
for mode in $modes; do
  out=$work/out-$mode
  rm -rf "$out" && mkdir -p "$out"
  # One line per test (each its own process and log): name, executable, filter.
  if [ -n "${BENCHCAGE_V2_PLAN:-}" ]; then
    cp "$BENCHCAGE_V2_PLAN" "$out/plan"
  else while read -r suite exe; do
    list() { "$repo/$exe" --list "$@" 2>/dev/null | sed -n 's/: test$//p' | sort; }
    comm -23 <(list) <(list --ignored) | sed "s/^/$suite./" |
      { grep -E "${want[$mode]}" || true; } | { grep -v -E "${leave[$mode]}" || true; } |
      { grep -E "${BENCHCAGE_V2_ONLY:-.}" || true; } |
      while read -r t; do echo "$t $repo/$exe --exact ${t#*.}"; done
  done <<<"$exes" >"$out/plan"; fi
  # The host's PATH (engines installed under /usr/local or pyenv).
  printf 'PATH=%q\n' "$PATH:/usr/local/sbin:/usr/sbin:/sbin" >"$out/env"
  # The guest runs its own copy of the scripts: edits here cannot reach it.
  cp scripts/v2/inside.sh scripts/v2/benchcage-v2.service scripts/v2/benchcage-v2.target "$out/"
  # A guest that shows no sign of life within $boot_wait seconds hung
  # while booting (TCG does now and then: the console stays empty) and
  # is booted once more; one that came up has the whole timeout.
  for attempt in 1 2; do
    disk=$work/scratch-$mode.img
    rm -f "$disk" && truncate -s 8G "$disk" && mkfs.ext4 -q -F "$disk"
    echo "test-v2: booting the $mode guest (kernel $kver, ${mem} MiB, 2 vCPUs, TCG)"
    started=$EPOCHREALTIME
    # The last boot's console would say "up" before tee empties it.
    rm -f "$work/console-$mode.log"
    # In the background so that an interrupted test-v2 takes its guest along.
    timeout "${BENCHCAGE_V2_TIMEOUT:-600}" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 -m "$mem" \
      -display none -monitor none -serial stdio -no-reboot \
      -kernel "$kdir/vmlinux" -initrd "$initrd" \
      -append "console=ttyS0 quiet loglevel=4 panic=-1 tsc=reliable clocksource=tsc cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1 systemd.unit=benchcage-v2.target systemd.show_status=error bc.mode=$mode bc.init=/v2out/inside.sh bc.out=/v2out bc.repo=$repo bc.bin=$bin" \
      -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
      -virtfs "local,path=$out,mount_tag=out,security_model=none,multidevs=remap" \
      -drive "file=$disk,format=raw,if=virtio,cache=unsafe" </dev/null > >(tee "$work/console-$mode.log") 2>&1 &
    guest=$!
    hung=
    while kill -0 "$guest" 2>/dev/null; do
      if grep -q "^guest($mode): up after" "$work/console-$mode.log" 2>/dev/null; then break; fi
      if (($(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", b - a }') >= boot_wait)); then
        hung=1
        kill "$guest" 2>/dev/null || true
        break
      fi
      sleep 1
    done
    qemu_rc=0
    wait "$guest" || qemu_rc=$?
    guest=
    rm -f "$disk"
    [ -n "$hung" ] || break
    echo "test-v2: the $mode guest was not up after ${boot_wait}s (console: $(wc -c <"$work/console-$mode.log") bytes); $( ((attempt == 1)) && echo "booting it once more" || echo "giving up")"
  done
  took=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
  echo "test-v2: $mode guest ran ${took}s (qemu exit $qemu_rc)"
  summarize "$mode" "$out" || status=1
done
exit $status
