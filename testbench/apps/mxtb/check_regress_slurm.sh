#!/usr/bin/env bash
# `mxtb regress --launcher slurm` on a real Slurm: starts a one-node cluster on this machine
# (slurm_cluster.sh: munged, slurmctld, slurmd from a generated slurm.conf in a temporary folder;
# no cgroups, linuxproc process tracking, no accounting), then
#   1. runs seeds 1-3 locally and through one job array of 2 tasks (2 seeds per task): both must
#      give the same verdict per seed, the same failures, the same phases, degraded flags and
#      summary fields (simulated durations aside: the host path charges its own measured compute
#      time, so they differ by microseconds between any two runs);
#   2. submits seeds 1-3 one per task, one task at a time (--jobs 1, --no-wait), cancels the first
#      task while its seed runs and the third while it waits; `--collect` must report the first
#      seed cancelled, the third cancelled or never started (scontrol forgets a task cancelled
#      while pending; sacct would say CANCELLED), neither passed, the second passed, exit 1;
#   3. submits 2 seeds with an output file in a folder no node has: the tasks cannot start, and both
#      seeds must be reported not_started, exit 1;
#   4. runs rack seeds (`--rack`: a served rack and its failover in each) locally and through one
#      job array: the same verdict and failures per seed, and the same blast-radius
#      table's counts (failovers and commits by case), written beside the Slurm run's JSON.
# Usage: check_regress_slurm.sh MXTB
# Exit 77 (skipped) only when Slurm or munge is not installed. The daemons are stopped and the
# folder removed on every exit.
set -euo pipefail

MXTB=${1:?usage: check_regress_slurm.sh MXTB}
# shellcheck source=testbench/apps/mxtb/slurm_cluster.sh
source "$(dirname "$0")/slurm_cluster.sh"

# ---- 1. the same seeds locally and through Slurm ----
set +e
"$MXTB" regress --seeds 3 --first-seed 1 --jobs 2 --quiet --out "$T/local" >"$T/local.txt" 2>&1
LOCAL_RC=$?
"$MXTB" regress --launcher slurm --seeds 3 --first-seed 1 --seeds-per-task 2 --time-limit 10 --poll-s 0.5 \
  --quiet --out "$T/slurm" >"$T/slurm.txt" 2>&1
SLURM_RC=$?
set -e
echo "--- local run (exit $LOCAL_RC)"
cat "$T/local.txt"
echo "--- slurm run (exit $SLURM_RC)"
cat "$T/slurm.txt"
[ -f "$T/local/regress.json" ] || fail "the local run wrote no regress.json"
[ -f "$T/slurm/regress.json" ] || fail "the slurm run wrote no regress.json"
[ "$LOCAL_RC" = "$SLURM_RC" ] || fail "exit codes differ: local $LOCAL_RC, slurm $SLURM_RC"
[ "$(jq -r .launcher "$T/slurm/regress.json")" = slurm ] || fail "the slurm run's JSON does not say launcher slurm"
[ "$(jq -r .tasks "$T/slurm/regress.json")" = 2 ] || fail "3 seeds at 2 per task must be 2 array tasks"
TASK_OUTS=$(find "$T/slurm/slurm" -name 'task-*_*.out' | wc -l)
[ "$TASK_OUTS" = 2 ] || fail "expected the output of 2 array tasks, found $TASK_OUTS"
JOB=$(jq -r .job_id "$T/slurm/campaign.json")
# What must be equal: seeds, verdicts, failures, phases, degraded, and the summary's counts.
view='{seeds, failed, passed, unfinished, stats: [.stats[] | {name, runs}],
       runs: [.runs[] | {seed, passed, status, exit_code, failures, degraded: .report.degraded,
                         phases: [(.report.phases // [])[] | .name]}]}'
jq -S "$view" "$T/local/regress.json" >"$T/local.view"
jq -S "$view" "$T/slurm/regress.json" >"$T/slurm.view"
if ! diff -u "$T/local.view" "$T/slurm.view"; then fail "the slurm run's result differs from the local run's"; fi
grep -q "slurm job $JOB (2 tasks, 2 seeds per task)" "$T/slurm.txt" || fail "the summary does not name the job array"
for f in junit.xml; do
  diff <(grep -o 'testcase classname="mxtb.regress" name="seed_[0-9]*"\|<failure\|<error' "$T/local/$f") \
       <(grep -o 'testcase classname="mxtb.regress" name="seed_[0-9]*"\|<failure\|<error' "$T/slurm/$f") ||
    fail "the JUnit testcases differ"
done
echo "same result: $(jq -c '[.runs[] | {seed, status}]' "$T/slurm/regress.json")"

# ---- 2. cancelled tasks are reported as cancelled ----
"$MXTB" regress --launcher slurm --seeds 3 --first-seed 1 --seeds-per-task 1 --jobs 1 --no-wait --quiet \
  --out "$T/cancel" >"$T/cancel-submit.txt" 2>&1 || { cat "$T/cancel-submit.txt"; fail "submitting with --no-wait failed"; }
cat "$T/cancel-submit.txt"
grep -q "mxtb regress --collect" "$T/cancel-submit.txt" || fail "--no-wait does not say how to collect"
JOB=$(jq -r .job_id "$T/cancel/campaign.json")
# Task 0 runs seed 1; --jobs 1 holds tasks 1 and 2 back (array throttle %1).
for _ in $(seq 600); do [ -f "$T/cancel/logs/seed-1.log" ] && break; sleep 0.1; done
[ -f "$T/cancel/logs/seed-1.log" ] || fail "task 0 of job $JOB never started seed 1"
scancel "${JOB}_0" "${JOB}_2"
for _ in $(seq 1200); do [ -z "$(squeue -h -j "$JOB" 2>/dev/null)" ] && break; sleep 0.1; done
[ -z "$(squeue -h -j "$JOB" 2>/dev/null)" ] || fail "job $JOB did not finish"
set +e
"$MXTB" regress --collect "$T/cancel" >"$T/collect.txt" 2>&1
COLLECT_RC=$?
set -e
echo "--- collect (exit $COLLECT_RC)"
cat "$T/collect.txt"
[ "$COLLECT_RC" = 1 ] || fail "collecting a campaign with cancelled tasks must exit 1, got $COLLECT_RC"
J="$T/cancel/regress.json"
[ "$(jq -r '.runs[0].status' "$J")" = cancelled ] || fail "seed 1 (task cancelled while it ran) is $(jq -r '.runs[0].status' "$J")"
[ "$(jq -r '.runs[1].status' "$J")" = passed ] || fail "seed 2 (task not cancelled) is $(jq -r '.runs[1].status' "$J")"
# A task cancelled while pending: sacct (with accounting) says CANCELLED; scontrol, all this cluster
# has, keeps no record of it, so the seed is "not_started". Never "passed" either way.
S3=$(jq -r '.runs[2].status' "$J")
[ "$S3" = cancelled ] || [ "$S3" = not_started ] || fail "seed 3 (task cancelled while pending) is $S3"
[ "$(jq -r '.failed' "$J")" = 2 ] || fail "2 cancelled seeds must count as failed"
grep -q "FAIL seed 1 \[cancelled\]: Slurm task ${JOB}_0 cancelled while the seed ran" "$T/collect.txt" ||
  fail "the summary does not name seed 1 as cancelled while it ran"
grep -q "FAIL seed 3 \[$S3\]: Slurm task ${JOB}_2 \(cancelled before the seed started\|never started\)" "$T/collect.txt" ||
  fail "the summary does not name seed 3 as cancelled or never started"
grep -q 'errors="2"' "$T/cancel/junit.xml" || fail "JUnit must count the 2 cancelled seeds as errors"

# ---- 3. tasks that fail to start are reported as such ----
# An output file in a folder no node has: Slurm cannot start the batch script.
set +e
"$MXTB" regress --launcher slurm --seeds 2 --first-seed 1 --poll-s 0.5 --quiet \
  --sbatch-args "--output=$T/no-such-dir/task-%a.out" --out "$T/nostart" >"$T/nostart.txt" 2>&1
NOSTART_RC=$?
set -e
echo "--- tasks that cannot start (exit $NOSTART_RC)"
cat "$T/nostart.txt"
[ "$NOSTART_RC" = 1 ] || fail "a campaign whose tasks cannot start must exit 1, got $NOSTART_RC"
for i in 0 1; do
  S=$(jq -r ".runs[$i].status" "$T/nostart/regress.json")
  [ "$S" = not_started ] || fail "seed $((i + 1)) of a task that could not start is $S"
done
grep -q "FAIL seed 1 \[not_started\]: Slurm task [0-9]*_0 ended FAILED" "$T/nostart.txt" ||
  fail "the summary does not say the task ended FAILED before the seed started"
# ---- 4. the rack campaign through Slurm ----
# Seeds 7019-7020: a death committed with the job running, and a fibre cut that rolls a commit back.
set +e
"$MXTB" regress --rack --seeds 2 --first-seed 7019 --jobs 2 --quiet --out "$T/rack-local" >"$T/rack-local.txt" 2>&1
RACK_LOCAL_RC=$?
"$MXTB" regress --rack --launcher slurm --seeds 2 --first-seed 7019 --jobs 2 --time-limit 10 --poll-s 0.5 --quiet \
  --out "$T/rack-slurm" >"$T/rack-slurm.txt" 2>&1
RACK_SLURM_RC=$?
set -e
echo "--- rack seeds, local (exit $RACK_LOCAL_RC)"
cat "$T/rack-local.txt"
echo "--- rack seeds, slurm (exit $RACK_SLURM_RC)"
cat "$T/rack-slurm.txt"
[ "$RACK_LOCAL_RC" = 0 ] || fail "rack seeds 7019-7020 failed locally"
[ "$RACK_SLURM_RC" = 0 ] || fail "rack seeds 7019-7020 failed through Slurm"
rack_view='{seeds, failed, passed, runs: [.runs[] | {seed, status, failures, scenario: .report.scenario}]}'
jq -S "$rack_view" "$T/rack-local/regress.json" >"$T/rack-local.view"
jq -S "$rack_view" "$T/rack-slurm/regress.json" >"$T/rack-slurm.view"
if ! diff -u "$T/rack-local.view" "$T/rack-slurm.view"; then fail "the rack seeds through Slurm differ from the local run"; fi
blast_view='{seeds, cases: [.cases[] | {case, failovers, committed}]}'
[ -f "$T/rack-slurm/blast-radius.json" ] || fail "the rack campaign through Slurm wrote no blast-radius.json"
diff -u <(jq -S "$blast_view" "$T/rack-local/blast-radius.json") <(jq -S "$blast_view" "$T/rack-slurm/blast-radius.json") ||
  fail "the blast radius through Slurm differs from the local one"
[ "$(jq -r .seeds "$T/rack-slurm/blast-radius.json")" = 2 ] || fail "the blast radius through Slurm does not count 2 seeds"
grep -q "migration (static torus)" "$T/rack-slurm.txt" || fail "the rack campaign through Slurm printed no blast-radius table"

echo "PASS: slurm campaign equals the local one (single server and rack); cancelled tasks reported as cancelled, tasks that cannot start as not started"
