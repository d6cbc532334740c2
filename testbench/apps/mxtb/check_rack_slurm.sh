#!/usr/bin/env bash
# `mxtb rack --launcher slurm` on a real Slurm: starts a one-node cluster on this machine
# (slurm_cluster.sh), then
#   1. runs the rack locally on one process and as one Slurm job of 2 tasks (MPICH's mpiexec inside
#      the job's allocation): exit 0 both, and every server's report byte-identical (the partition
#      and the launcher change nothing);
#   2. submits it with an output file in a folder no node has: the job cannot start, and the
#      launcher must say it ended without its exit record, exit non-zero, no report.
# Usage: check_rack_slurm.sh MXTB SCENARIO
# Exit 77 (skipped) only when Slurm, munge or jq is not installed.
set -euo pipefail

MXTB=${1:?usage: check_rack_slurm.sh MXTB SCENARIO}
SCENARIO=${2:?usage: check_rack_slurm.sh MXTB SCENARIO}
# shellcheck source=testbench/apps/mxtb/slurm_cluster.sh
source "$(dirname "$0")/slurm_cluster.sh"

# ---- 1. the same rack locally and as a Slurm job ----
"$MXTB" rack --scenario "$SCENARIO" --out "$T/local" >"$T/local.txt" 2>&1 || { cat "$T/local.txt"; fail "the local run failed"; }
set +e
"$MXTB" rack --launcher slurm --processes 2 --time-limit 10 --poll-s 0.5 --scenario "$SCENARIO" --out "$T/slurm" \
  >"$T/slurm.txt" 2>&1
RC=$?
set -e
echo "--- slurm run (exit $RC)"
cat "$T/slurm.txt"
[ "$RC" = 0 ] || fail "the rack as a Slurm job exited $RC"
grep -q "^# submitted slurm job [0-9]* (2 tasks)" "$T/slurm.txt" || fail "the launcher does not name the job"
grep -q "on 2 process(es)" "$T/slurm.txt" || fail "the job's output does not show rank 0's report over 2 processes"
[ -f "$T/slurm/slurm/rack.sbatch" ] && [ -f "$T/slurm/slurm/rack.exit" ] || fail "no batch script or exit record in OUT/slurm"
jq -S .servers "$T/local/rack.json" >"$T/local.view"
jq -S .servers "$T/slurm/rack.json" >"$T/slurm.view"
diff -q "$T/local.view" "$T/slurm.view" >/dev/null || fail "the Slurm job's servers differ from the local run's"
for e in "$T"/local/events/*.jsonl; do
  cmp -s "$e" "$T/slurm/events/$(basename "$e")" || fail "event log $(basename "$e") differs"
done
echo "same rack: $(jq -c '[.servers[] | {server, cycles, messages_delivered}]' "$T/slurm/rack.json")"

# ---- 2. a job that cannot start ----
set +e
"$MXTB" rack --launcher slurm --processes 2 --poll-s 0.5 --scenario "$SCENARIO" --out "$T/nostart" \
  --sbatch-args "--output=$T/no-such-dir/rack-%j.out" >"$T/nostart.txt" 2>&1
RC=$?
set -e
cat "$T/nostart.txt"
[ "$RC" != 0 ] || fail "a rack job that cannot start must exit non-zero"
grep -q "ended without its exit record" "$T/nostart.txt" || fail "the launcher does not say the job left no exit record"
[ ! -f "$T/nostart/rack.json" ] || fail "a job that never started left a report"
echo "PASS: the rack as a Slurm job of 2 tasks equals the local run; a job that cannot start is reported as such"
