#!/usr/bin/env bash
# Formal property checks of the RTL's assertions (rtl/common/mxtb_assert.svh) with Yosys and
# yosys-smtbmc. docs/verification.md lists every property and its status.
#
#   rtl/formal/formal.sh [options] GROUP...     GROUP: a name below, or "all"
#     --gen DIR      the generated packages (link_pkg.sv, ocs_reg_pkg.sv)   (required)
#     --out DIR      work and results folder (default build-formal)
#     --rtl DIR      the rtl/ folder to read (default: the one next to this script); a test
#                    points it at a patched copy
#     --solver S     z3 (default) or another yosys-smtbmc solver (cvc4, boolector)
#     --list         print the groups and exit
#
# Each group is one top module at stated parameters and one mode:
#   prove N   bounded model check to depth N from reset, then k-induction with k = N: both
#             passing proves every assertion for all reachable states (unbounded)
#   bmc N     bounded model check to depth N only
#   abc N     bounded model check to depth N (frames 0..N-1) with ABC's bmc3 on the bit-level
#             AIG (yosys-abc, from the same Debian package), after signal-correspondence
#             reduction: for models whose CRC and scramblers drown an SMT solver (the link pair)
# A failure writes the counterexample as VCD (GTKWave opens it), prints the failing property and
# the command that reruns the group, and the script exits 1. results.tsv in --out gets one line
# per group: group, top, mode, depth, status, seconds.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RTL="$(cd "$HERE/.." && pwd)"
GEN=""
OUT="build-formal"
SOLVER="z3"
RTL_GIVEN=0

# name | top | parameters (-chparam ...) | mode depth | files (relative to rtl/, @gen/ for generated)
GROUPS_TABLE='
ocs_axil|ocs_axil_slave||prove 4|ocs/ocs_axil_slave.sv
ocs_seq_small|ocs_sequencer|N_PORTS=4 N_ELEMS=4 DAC_BITS=3|prove 6|@gen/ocs_reg_pkg.sv ocs/ocs_sequencer.sv
ocs_log_small|ocs_event_log|N_LINKS=2 DEPTH=4|prove 4|@gen/ocs_reg_pkg.sv @gen/link_pkg.sv ocs/ocs_event_log.sv
ocs_log_odd|ocs_event_log|N_LINKS=2 DEPTH=3|prove 4|@gen/ocs_reg_pkg.sv @gen/link_pkg.sv ocs/ocs_event_log.sv
ocs_ctl_small|ocs_controller|N_PORTS=4 N_ELEMS=4 DAC_BITS=3 N_LINKS=2 LANES=1 EVENT_DEPTH=4 SCRATCH_WORDS=2|prove 6|@gen/ocs_reg_pkg.sv @gen/link_pkg.sv ocs/ocs_axil_slave.sv ocs/ocs_event_log.sv ocs/ocs_sequencer.sv ocs/ocs_link_map.sv ocs/ocs_controller.sv
ocs_ctl_reset|ocs_controller|N_PORTS=4 N_ELEMS=4 DAC_BITS=3 N_LINKS=2 LANES=1 EVENT_DEPTH=4 SCRATCH_WORDS=2 DAC_MIN_RESET=2 DAC_MAX_RESET=6 SAFE_CODE_RESET=5 UPDATE_CYCLES_RESET=3 SETTLE_CYCLES_RESET=7 VERIFY_MIN_RESET=9 PD_TIMEOUT_RESET=11 WATCHDOG_RESET=13 IRQ_MASK_RESET=21|bmc 3|@gen/ocs_reg_pkg.sv @gen/link_pkg.sv ocs/ocs_axil_slave.sv ocs/ocs_event_log.sv ocs/ocs_sequencer.sv ocs/ocs_link_map.sv ocs/ocs_controller.sv
ocs_log_default|ocs_event_log||bmc 4|@gen/ocs_reg_pkg.sv @gen/link_pkg.sv ocs/ocs_event_log.sv
link_train_small|link_train|RESET_CYCLES=2 DETECT_STABLE=2 DETECT_TIMEOUT=8 LOCK_TIMEOUT=8 TS_COUNT=2 TS_TIMEOUT=8 RETRAIN_HOLD=2 HB_TIMEOUT=8 ERR_WINDOW=8 ERR_THRESHOLD=2|prove 4|@gen/link_pkg.sv link/link_train.sv
link_lock_small|link_block_lock|LOCK_GOOD=4 UNLOCK_BAD=3|prove 4|link/link_block_lock.sv
link_rx_small|link_rx|MAX_WORDS=2 RX_SLOTS=2|prove 4|@gen/link_pkg.sv common/crc32_d64.sv link/link_rx.sv
link_tx_small|link_tx|MAX_WORDS=2 REPLAY_DEPTH=2 HB_PERIOD=4 REPLAY_TIMEOUT=4 MAX_REPLAYS=2|prove 4|@gen/link_pkg.sv common/crc32_d64.sv link/link_tx.sv
link_train_default|link_train||bmc 24|@gen/link_pkg.sv link/link_train.sv
link_pair_bmc|link_pair_formal||abc 27|@gen/link_pkg.sv common/crc32_d64.sv common/scrambler58.sv common/descrambler58.sv link/link_block_lock.sv link/link_tx.sv link/link_rx.sv link/link_train.sv link/link_endpoint.sv formal/pair/pair_channel.sv formal/pair/pair_xpu.sv formal/pair/link_pair_formal.sv
link_pair_live|link_pair_formal|LIVE_K=19 FLIPS=0|abc 22|@gen/link_pkg.sv common/crc32_d64.sv common/scrambler58.sv common/descrambler58.sv link/link_block_lock.sv link/link_tx.sv link/link_rx.sv link/link_train.sv link/link_endpoint.sv formal/pair/pair_channel.sv formal/pair/pair_xpu.sv formal/pair/link_pair_formal.sv
ipbus_small|ipbus_formal||abc 24|@gen/ocs_reg_pkg.sv @gen/emu_reg_pkg.sv ipbus/ipbus_transactor.sv formal/ipbus/ipbus_formal.sv
board_ram_small|board_ram|WORDS=4|prove 4|board/board_ram.sv
board_arbiter|axil_arbiter||prove 4|board/axil_arbiter.sv
board_bus_small|board_bus_formal||abc 24|@gen/ocs_reg_pkg.sv @gen/emu_reg_pkg.sv ipbus/ipbus_transactor.sv board/board_ram.sv board/board_bus.sv formal/board/board_bus_formal.sv
board_bus_board|board_bus_formal|EMU_PORT=0|abc 24|@gen/ocs_reg_pkg.sv @gen/emu_reg_pkg.sv ipbus/ipbus_transactor.sv board/board_ram.sv board/board_bus.sv formal/board/board_bus_formal.sv
'

die() { echo "formal: $*" >&2; exit 2; }

# Groups whose top is the whole environment of a submodule: that submodule's assumptions become
# assertions there, so the proof checks that the top keeps them instead of taking them as given
# (the controller keeps the sequencer's env_* promises).
obliged_submodules() { case "$1" in ocs_ctl_small) echo "ocs_sequencer" ;; esac; }

groups=()
while [ $# -gt 0 ]; do
  case "$1" in
    --gen) GEN="${2:?--gen wants a folder}"; shift 2 ;;
    --out) OUT="${2:?--out wants a folder}"; shift 2 ;;
    --rtl) RTL="${2:?--rtl wants a folder}"; RTL_GIVEN=1; shift 2 ;;
    --solver) SOLVER="${2:?--solver wants a name}"; shift 2 ;;
    --list) echo "$GROUPS_TABLE" | sed '/^$/d' | cut -d'|' -f1,2,4 | tr '|' '\t'; exit 0 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) groups+=("$1"); shift ;;
  esac
done
[ ${#groups[@]} -gt 0 ] || die "name a group or 'all' (--list shows them)"
[ -n "$GEN" ] || die "--gen FOLDER (the generated link_pkg.sv and ocs_reg_pkg.sv) is required"
[ -f "$GEN/link_pkg.sv" ] && [ -f "$GEN/ocs_reg_pkg.sv" ] || die "--gen $GEN: no link_pkg.sv / ocs_reg_pkg.sv there"
[ -f "$RTL/common/mxtb_assert.svh" ] || die "--rtl $RTL: not an rtl/ folder (no common/mxtb_assert.svh)"
command -v yosys >/dev/null || die "yosys not found (Debian package yosys)"
command -v yosys-smtbmc >/dev/null || die "yosys-smtbmc not found (Debian package yosys)"
command -v "$SOLVER" >/dev/null || die "solver '$SOLVER' not found (Debian package z3)"
GEN="$(cd "$GEN" && pwd)"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

if [ "${groups[0]}" = all ]; then
  mapfile -t groups < <(echo "$GROUPS_TABLE" | sed '/^$/d' | cut -d'|' -f1)
fi

rerun_cmd() {
  local cmd="$0 --gen $GEN --out $OUT"
  [ "$RTL_GIVEN" = 1 ] && cmd+=" --rtl $RTL"
  [ "$SOLVER" != z3 ] && cmd+=" --solver $SOLVER"
  echo "$cmd $1"
}

failed=0
: > "$OUT/results.tsv.new"
[ -f "$OUT/results.tsv" ] && grep -v -E "^($(IFS='|'; echo "${groups[*]}"))	" "$OUT/results.tsv" >> "$OUT/results.tsv.new" || true
for g in "${groups[@]}"; do
  line="$(echo "$GROUPS_TABLE" | grep "^$g|" || true)"
  [ -n "$line" ] || die "unknown group '$g' (--list shows them)"
  IFS='|' read -r name top params modedepth files <<< "$line"
  read -r mode depth <<< "$modedepth"
  dir="$OUT/$name"
  rm -rf "$dir"; mkdir -p "$dir"
  srcs=()
  for f in $files; do
    case "$f" in @gen/*) srcs+=("$GEN/${f#@gen/}") ;; *) srcs+=("$RTL/$f") ;; esac
  done
  chp=""
  for p in $params; do chp+=" -chparam ${p%%=*} ${p#*=}"; done
  oblige=""
  obliged=$(obliged_submodules "$name")
  # *name: a module given parameters is renamed $paramod$<hash>\name.
  for m in $obliged; do oblige+="proc; chformal -assume -assume2assert *$m; "; done
  start=$(date +%s.%N)
  if [ "$mode" = abc ]; then
    # The AIG flow of SymbiYosys's abc engine: free inputs ($anyseq) and uninitialised registers
    # (the buffers' memories) become AIG inputs, assertions bad-state outputs in the order Yosys
    # lists its $assert cells, which asserts.txt keeps to name a failing one.
    if ! yosys -q -l "$dir/yosys.log" -p "read_verilog -formal -sv -I$RTL/common ${srcs[*]}; \
        hierarchy -check -top $top$chp; $oblige prep -top $top; flatten; memory_map; opt -fast; async2sync; \
        chformal -assume -early; chformal -live -fair -cover -remove; opt_clean; setundef -anyseq; \
        opt -keepdc -fast; techmap; opt -fast -nodffe -nosdff; dffunmap; abc -g AND -fast; opt_clean; \
        tee -q -o $dir/asserts.txt select -list t:\$assert; write_aiger -zinit $dir/model.aig" > "$dir/yosys.out" 2>&1; then
      cat "$dir/yosys.out" >&2
      echo "formal: $name: Yosys failed (log: $dir/yosys.log); rerun: $(rerun_cmd "$name")" >&2
      failed=1
      continue
    fi
    yosys-abc -c "read_aiger $dir/model.aig; fold; strash; dc2; &get -n; &scorr; &put; dc2; bmc3 -F $depth -v; \
        write_cex -a $dir/cex.aiw" > "$dir/bmc.log" 2>&1 || true
    if grep -q "No output asserted in $depth frames" "$dir/bmc.log"; then
      status="bounded to depth $depth"
    else
      status="FAILED (bmc)"
      # "Output 12 of miter ... was asserted in frame 26": name the property.
      out=$(grep -oE "Output [0-9]+ .*asserted in frame [0-9]+" "$dir/bmc.log" | head -1)
      idx=$(echo "$out" | grep -oE "^Output [0-9]+" | grep -oE "[0-9]+")
      if [ -n "$idx" ]; then
        prop=$(grep -v '^$' "$dir/asserts.txt" | sed -n "$((idx + 1))p" | sed 's/.*[.\]//')
        echo "  Assert failed in $top: $prop ($out)" > "$dir/bmc.log.failed"
      fi
    fi
  # async2sync: the asynchronous resets as the solver's synchronous model; memories become
  # registers (the shrunk ones are small).
  elif ! yosys -q -l "$dir/yosys.log" -p "read_verilog -formal -sv -I$RTL/common ${srcs[*]}; \
      hierarchy -check -top $top$chp; $oblige prep -flatten -top $top; async2sync; dffunmap; memory_map; opt_clean; \
      write_smt2 -wires $dir/model.smt2" > "$dir/yosys.out" 2>&1; then
    cat "$dir/yosys.out" >&2
    echo "formal: $name: Yosys failed (log: $dir/yosys.log); rerun: $(rerun_cmd "$name")" >&2
    failed=1
    continue
  fi
  if [ "$mode" != abc ]; then
    status=""
    # z3 4.8.12 stalls on the incremental queries of some of these models; unrolled it answers in
    # seconds.
    smt=(-s "$SOLVER")
    [ "$SOLVER" = z3 ] && smt+=(--unroll)
    if ! yosys-smtbmc "${smt[@]}" --presat -t "$depth" --dump-vcd "$dir/cex.vcd" "$dir/model.smt2" > "$dir/bmc.log" 2>&1; then
      status="FAILED (bmc)"
    elif [ "$mode" = prove ]; then
      if yosys-smtbmc "${smt[@]}" --presat -i -t "$depth" --dump-vcd "$dir/cex-induction.vcd" "$dir/model.smt2" > "$dir/induction.log" 2>&1; then
        status="proven (k-induction, k=$depth)"
      else
        status="FAILED (induction)"
      fi
    else
      status="bounded to depth $depth"
    fi
  fi
  secs=$(echo "$(date +%s.%N) - $start" | bc)
  secs=$(printf '%.1f' "$secs")
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$top" "$mode" "$depth" "$status" "$secs" >> "$OUT/results.tsv.new"
  case "$status" in
    FAILED*)
      failed=1
      log="$dir/bmc.log"; vcd="$dir/cex.vcd"
      [ "$status" = "FAILED (induction)" ] && log="$dir/induction.log" && vcd="$dir/cex-induction.vcd"
      echo "formal: $name ($top$([ -n "$params" ] && echo " $params")): $status in ${secs}s" >&2
      if [ -f "$dir/bmc.log.failed" ]; then cat "$dir/bmc.log.failed" >&2
      else grep -E "Assert(ion)? failed|failed!" "$log" | sed 's/^## *[0-9:]* */  /' >&2 || tail -5 "$log" >&2; fi
      if [ -f "$vcd" ]; then
        echo "  counterexample: $vcd (gtkwave $vcd)" >&2
      elif [ -f "$dir/cex.aiw" ]; then
        echo "  counterexample: $dir/cex.aiw (an AIGER witness of the reduced model: the failing frame and property above)" >&2
      fi
      [ "$status" = "FAILED (induction)" ] &&
        echo "  (an induction counterexample may start in an unreachable state: a missing helper invariant)" >&2
      echo "  rerun: $(rerun_cmd "$name")" >&2
      ;;
    *) echo "formal: $name ($top): $status in ${secs}s" ;;
  esac
done
sort "$OUT/results.tsv.new" > "$OUT/results.tsv"; rm -f "$OUT/results.tsv.new"
exit $failed
