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

# broken_copy COPY FILE SED_EXPR PATCHED_LINE FORMAL_OUT GROUP: rtl/ copied to $OUT/COPY with
# FILE patched, then GROUP's proof on it, which must fail (exit 1); its output in FORMAL_OUT.txt.
broken_copy() {
  cp -r "$SRC/rtl" "$OUT/$1"
  sed -i "$3" "$OUT/$1/$2"
  grep -q "$4" "$OUT/$1/$2" || { echo "FAIL: the patch of $2 did not apply"; exit 1; }
  set +e
  "$OUT/$1/formal/formal.sh" --gen "$GEN" --out "$OUT/$5" --rtl "$OUT/$1" "$6" > "$OUT/$5.txt" 2>&1
  local rc=$?
  set -e
  cat "$OUT/$5.txt"
  [ "$rc" -eq 1 ] || { echo "FAIL: $6's proof of the broken $2 exited $rc, expected 1 (a failed proof)"; exit 1; }
}

broken_copy rtl ocs/ocs_sequencer.sv 's/if (commit_gen_i == act_gen_q) begin/if (commit_gen_i != act_gen_q) begin/' \
  'if (commit_gen_i != act_gen_q) begin' formal ocs_seq_small
grep -q 'seq_noop_commit_stays_idle' "$OUT/formal.txt" || { echo "FAIL: the failing property is not named"; exit 1; }
grep -q 'rerun: .*formal.sh .*--rtl .* ocs_seq_small' "$OUT/formal.txt" || { echo "FAIL: no rerun line"; exit 1; }
vcd="$OUT/formal/ocs_seq_small/cex.vcd"
[ -s "$vcd" ] || { echo "FAIL: no counterexample VCD at $vcd"; exit 1; }
grep -q '^\$enddefinitions' "$vcd" && grep -q 'commit_i' "$vcd" || { echo "FAIL: $vcd is not a VCD of the sequencer"; exit 1; }
grep -q "counterexample: $vcd" "$OUT/formal.txt" || { echo "FAIL: the counterexample's path is not printed"; exit 1; }
echo "PASS: the broken line fails its proof with a counterexample ($vcd)"

broken_copy rtl-ctl ocs/ocs_controller.sv 's/assign limits_locked = seq_busy || wd_due;/assign limits_locked = seq_busy;/' \
  'assign limits_locked = seq_busy;' formal-ctl ocs_ctl_small
grep -q 'ctl_safe_code_still_sweeping\|env_safe_code_still' "$OUT/formal-ctl.txt" || { echo "FAIL: the failing property is not named"; exit 1; }
echo "PASS: a SAFE_CODE taken as the watchdog expires fails the controller's proof"
