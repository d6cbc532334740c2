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
# ---- 3. the rack served as a Slurm job ----
# Its `listening on` lines reach the launcher's output while the job runs; each board answers the
# host's tool at its address; SIGINT to the launcher stops the job's processes, which write the
# report, and the launcher exits with mpiexec's status.
"$MXTB" rack --launcher slurm --processes 2 --time-limit 10 --poll-s 0.5 --scenario "$SCENARIO" --out "$T/serve" \
  --serve --stop-after-s 300 >"$T/serve.txt" 2>&1 &
LAUNCHER=$!
for _ in $(seq 1 240); do
  [ "$(grep -c '^listening on udp://' "$T/serve.txt" || true)" -ge 2 ] && break
  kill -0 "$LAUNCHER" 2>/dev/null || break
  sleep 0.5
done
cat "$T/serve.txt"
[ "$(grep -c '^listening on udp://' "$T/serve.txt" || true)" = 2 ] || { kill -INT "$LAUNCHER" 2>/dev/null; fail "the served rack's two listening lines did not reach the launcher's output"; }
for s in 0 1; do
  addr=$(sed -n "s|^listening on \(udp://[^ ]*\) server $s\$|\1|p" "$T/serve.txt")
  "$MXTB" reg read --target "$addr" emu.TIME_MODE >"$T/reg$s.txt" 2>&1 || { cat "$T/reg$s.txt"; kill -INT "$LAUNCHER"; fail "server $s at $addr does not answer"; }
  echo "server $s at $addr: $(cat "$T/reg$s.txt")"
done
kill -INT "$LAUNCHER"
set +e
wait "$LAUNCHER"
RC=$?
set -e
cat "$T/serve.txt" | tail -5
[ "$RC" = 0 ] || fail "the served rack's launcher exited $RC after SIGINT"
grep -q "scancel --signal=INT" "$T/serve.txt" || fail "the launcher did not pass SIGINT on to the job"
[ -f "$T/serve/rack.json" ] || fail "the served rack stopped by SIGINT wrote no report"
echo "PASS: the rack as a Slurm job of 2 tasks equals the local run; a job that cannot start is reported as such; served on Slurm, each board answers and SIGINT stops the job"
