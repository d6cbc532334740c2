#!/usr/bin/env bash
# A deliberately broken RTL line must make a proof fail with a counterexample: a copy of rtl/ in
# the build tree where COMMIT of the active generation is taken for a new one, then the
# sequencer's proof, which must fail naming the property, write a VCD and print the rerun line.
# Then a second copy whose controller accepts SAFE_CODE in the cycle the watchdog expires (the
# sweep then starts with two codes): the controller's proof must fail, which it can only because
# it checks the sequencer's assumptions as assertions (formal.sh's obliged_submodules).
#   formal_broken.sh SOURCE_DIR GEN_DIR OUT_DIR
set -euo pipefail
SRC="$1"; GEN="$2"; OUT="$3"
rm -rf "$OUT"; mkdir -p "$OUT"
cp -r "$SRC/rtl" "$OUT/rtl"
seq="$OUT/rtl/ocs/ocs_sequencer.sv"
sed -i 's/if (commit_gen_i == act_gen_q) begin/if (commit_gen_i != act_gen_q) begin/' "$seq"
grep -q 'if (commit_gen_i != act_gen_q) begin' "$seq" || { echo "FAIL: the patch did not apply"; exit 1; }

set +e
"$OUT/rtl/formal/formal.sh" --gen "$GEN" --out "$OUT/formal" --rtl "$OUT/rtl" ocs_seq_small > "$OUT/formal.txt" 2>&1
rc=$?
set -e
cat "$OUT/formal.txt"
[ "$rc" -eq 1 ] || { echo "FAIL: the broken RTL's proof exited $rc, expected 1 (a failed proof)"; exit 1; }
grep -q 'seq_noop_commit_stays_idle' "$OUT/formal.txt" || { echo "FAIL: the failing property is not named"; exit 1; }
grep -q 'rerun: .*formal.sh .*--rtl .* ocs_seq_small' "$OUT/formal.txt" || { echo "FAIL: no rerun line"; exit 1; }
vcd="$OUT/formal/ocs_seq_small/cex.vcd"
[ -s "$vcd" ] || { echo "FAIL: no counterexample VCD at $vcd"; exit 1; }
grep -q '^\$enddefinitions' "$vcd" && grep -q 'commit_i' "$vcd" || { echo "FAIL: $vcd is not a VCD of the sequencer"; exit 1; }
grep -q "counterexample: $vcd" "$OUT/formal.txt" || { echo "FAIL: the counterexample's path is not printed"; exit 1; }
echo "PASS: the broken line fails its proof with a counterexample ($vcd)"

cp -r "$SRC/rtl" "$OUT/rtl-ctl"
ctl="$OUT/rtl-ctl/ocs/ocs_controller.sv"
sed -i 's/assign limits_locked = seq_busy || wd_due;/assign limits_locked = seq_busy;/' "$ctl"
grep -q 'assign limits_locked = seq_busy;' "$ctl" || { echo "FAIL: the controller patch did not apply"; exit 1; }
set +e
"$OUT/rtl-ctl/formal/formal.sh" --gen "$GEN" --out "$OUT/formal-ctl" --rtl "$OUT/rtl-ctl" ocs_ctl_small > "$OUT/formal-ctl.txt" 2>&1
rc=$?
set -e
cat "$OUT/formal-ctl.txt"
[ "$rc" -eq 1 ] || { echo "FAIL: the controller's proof exited $rc on a SAFE_CODE taken at expiry, expected 1"; exit 1; }
grep -q 'ctl_safe_code_still_sweeping\|env_safe_code_still' "$OUT/formal-ctl.txt" || { echo "FAIL: the failing property is not named"; exit 1; }
echo "PASS: a SAFE_CODE taken as the watchdog expires fails the controller's proof"
