#!/usr/bin/env bash
# The nightly: run the nightly matrix, report it, then every check that
# can fail a night, each one run even when one before it failed:
#
#   compare --by-version RUN       each version against the one before it
#   compare best-of-last:5 RUN     each cell against the last five nights
#   claims RUN                     the write-ups' findings (when the scenario has any)
#   changes                        change points over the whole history
#
# Exit 0 when the run finished and no check failed, 1 when a check found
# a regression (or a cell failed), 2 when the run could not start (bad
# input: nothing was run). The systemd units in contrib/systemd/ run it
# every night; its output goes to the journal.
#
# Settings (environment):
#   BENCHCAGE           the binary (default: benchcage on PATH, else
#                       target/release or target/debug of this checkout)
#   BENCHCAGE_HOME      the project folder (default: this checkout)
#   BENCHCAGE_RESULTS   the results folder (default: HOME/results)
#   NIGHTLY_SCENARIO    the scenario (default: scenarios/nightly.yaml)
#   NIGHTLY_THRESHOLD   compare's threshold (default: 5%)
#   NIGHTLY_WINDOW      changes' --window (default: 5)
#   NIGHTLY_FETCH       "no" to run without --fetch (default: fetch)
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
home=${BENCHCAGE_HOME:-$here}
bin=${BENCHCAGE:-}
if [[ -z $bin ]]; then
  if command -v benchcage >/dev/null; then
    bin=benchcage
  elif [[ -x $home/target/release/benchcage ]]; then
    bin=$home/target/release/benchcage
  else
    bin=$home/target/debug/benchcage
  fi
fi
scenario=${NIGHTLY_SCENARIO:-scenarios/nightly.yaml}
threshold=${NIGHTLY_THRESHOLD:-5%}
window=${NIGHTLY_WINDOW:-5}
fetch=(--fetch)
[[ ${NIGHTLY_FETCH:-} == no ]] && fetch=()

bc() { "$bin" --home "$home" "$@"; }
say() { echo "nightly: $*"; }

cd "$home" || exit 2
say "$(date -u +%FT%TZ) run $scenario with $bin"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bc run "$scenario" "${fetch[@]}" | tee "$out"
ran=${PIPESTATUS[0]}
run_dir=$(sed -n 's/^results: //p' "$out" | tail -n 1)
if [[ $ran == 2 || -z $run_dir ]]; then
  say "the run did not start (exit $ran): nothing to check"
  exit 2
fi
run=$(basename "$run_dir")
status=0
if [[ $ran != 0 ]]; then
  say "run $run exited $ran (1: a cell failed, 3: a phase failed, 130: interrupted)"
  status=1
fi

check() {
  local what=$1
  shift
  say "$what"
  "$@"
  local rc=$?
  if [[ $rc == 1 ]]; then
    say "$what: FAILED"
    status=1
  elif [[ $rc != 0 ]]; then
    say "$what: could not check (exit $rc)"
    status=1
  fi
}

check "report" bc report "$run"
# A matrix without two versions of an engine has nothing to compare by
# version (compare says so and exits 2): not a failed night.
say "compare --by-version"
bc compare --by-version "$run" --threshold "$threshold"
case $? in
  0) ;;
  2) say "compare --by-version: not applicable to this matrix" ;;
  *) say "compare --by-version: FAILED"; status=1 ;;
esac
name=$(sed -n 's/^  "scenario": "\(.*\)",$/\1/p' "$run_dir/run.json" | head -n 1)
nights=$(bc history --scenario "$name" --ids 2>/dev/null | wc -l)
if ((nights > 1)); then
  check "compare best-of-last:5" bc compare best-of-last:5 "$run" --threshold "$threshold" --metric throughput --metric p99
else
  say "compare best-of-last:5: first night of $name, nothing to compare with yet"
fi
if bc help claims >/dev/null 2>&1; then
  check "claims" bc claims "$run"
fi
check "changes" bc changes --window "$window"
if bc help site >/dev/null 2>&1; then
  check "site" bc site -o "${BENCHCAGE_RESULTS:-$home/results}/site"
fi
say "$(date -u +%FT%TZ) done: run $run, exit $status"
exit $status
