#!/usr/bin/env bash
# Place and route of one RTL module on an iCE40 FPGA (Yosys synth_ice40, nextpnr-ice40, icepack,
# icetime; Debian packages yosys, nextpnr-ice40, fpga-icestorm, fpga-icestorm-chipdb): proof that
# the RTL passes a real FPGA flow, its size and its maximum clock frequency. docs/fpga-flow.md.
#
#   rtl/fpga/ice40.sh --top TOP --out DIR [options] FILE.sv...
#     --top TOP          the module to implement                                      (required)
#     --out DIR          work and results folder                                      (required)
#     --device D         hx8k (default) or up5k
#     --package P        hx8k: ct256 (default), cm225, tq144, cb132, cm121, bg121, cm81;
#                        up5k: sg48 (default), uwg30
#     --param NAME=VALUE a parameter of TOP (Yosys chparam; a string value in double quotes)
#     --inc DIR          an include folder (`include files such as rtl/common/mxtb_assert.svh)
#     --freq MHZ         target clock frequency for timing-driven place and route (default 100);
#                        missing it is reported, not an error: the point is to measure fmax
#     --clock PORT       a clock input of TOP (repeatable; default: the 1-bit inputs named clk,
#                        clock, *_clk, clk_i, *_clk_i, i_clk)
#     --wrap W           auto (default), yes or no: the out-of-context wrapper below
#     --seed N           nextpnr's placer seed (default 1; the same seed gives the same result)
#
# Outputs in DIR: TOP.json (netlist), TOP.asc, TOP.bin (bitstream), TOP-synth-stat.txt,
# TOP-report.json (nextpnr: fmax per clock, utilisation), TOP-icetime.txt, the tools' logs, and
# TOP-ice40.tsv, one line: top, device, LUTs (SB_LUT4), FFs (SB_DFF*), BRAMs (SB_RAM40_4K*),
# fmax in MHz (nextpnr, the slowest clock). The counts are TOP's own, without the wrapper.
# Bad input (an unknown option, a missing file or tool) exits 2; a failing tool exits 1 and
# names its log.
#
# Out of context: a core's ports are not board pins, and a core such as ocs_axil_slave has more
# port bits (220 at AW=16) than the package has pins (206 on the HX8K's ct256): nextpnr-ice40 0.4
# then stops with "Unable to find a placement location for cell '...$sb_io'". It has no
# out-of-context mode: it puts an SB_IO on every top-level port (synth_ice40 of Yosys 0.23 has no
# -noiopad, and nextpnr inserts the IO buffers itself), and --pcf-allow-unconstrained only lets a
# PCF leave ports out, each still needing a pin. So when the port bits exceed the package's pins
# (--wrap auto), the script generates a wrapper, DIR/TOP_ooc.v, with one pin per clock and three
# more: every other input bit of TOP comes from a flip-flop of a shift register fed by the pin
# ooc_sin, and every output bit goes to a flip-flop of a parallel-load shift register (ooc_load)
# that shifts out on ooc_sout. Each path of TOP therefore starts and ends at a register, as it
# would inside a larger design: nextpnr's fmax is TOP's register-to-register speed plus at most one
# LUT (the load mux) after a combinational output. An XOR tree folding the outputs into one pin
# would add its own logic levels to those paths instead. TOP keeps its hierarchy
# (keep_hierarchy), so Yosys's statistics count TOP's cells apart from the wrapper's and no logic
# is optimised across the boundary. Without the wrapper (it fits) nextpnr places the IOs itself
# (no PCF) and its fmax covers only register-to-register paths inside TOP.
set -euo pipefail

die() { echo "ice40: $*" >&2; exit 2; }
fail() { echo "ice40: $*" >&2; exit 1; }

TOP=""
OUT=""
DEVICE="hx8k"
PACKAGE=""
FREQ="100"
SEED="1"
WRAP="auto"
params=()
incs=()
clocks=()
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --top) TOP="${2:?--top wants a module name}"; shift 2 ;;
    --out) OUT="${2:?--out wants a folder}"; shift 2 ;;
    --device) DEVICE="${2:?--device wants hx8k or up5k}"; shift 2 ;;
    --package) PACKAGE="${2:?--package wants a package name}"; shift 2 ;;
    --param) params+=("${2:?--param wants NAME=VALUE}"); shift 2 ;;
    --inc) incs+=("${2:?--inc wants a folder}"); shift 2 ;;
    --freq) FREQ="${2:?--freq wants MHz}"; shift 2 ;;
    --clock) clocks+=("${2:?--clock wants a port name}"); shift 2 ;;
    --wrap) WRAP="${2:?--wrap wants auto, yes or no}"; shift 2 ;;
    --seed) SEED="${2:?--seed wants a number}"; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) files+=("$1"); shift ;;
  esac
done

[ -n "$TOP" ] || die "--top TOP (the module to implement) is required"
[ -n "$OUT" ] || die "--out DIR (the work and results folder) is required"
[ ${#files[@]} -gt 0 ] || die "name the SystemVerilog files of $TOP"
[[ "$TOP" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "--top '$TOP': not a module name"
case "$DEVICE" in
  hx8k) : "${PACKAGE:=ct256}" ;;
  up5k) : "${PACKAGE:=sg48}" ;;
  *) die "--device '$DEVICE': hx8k or up5k" ;;
esac
# User IO pins per package (fpga-icestorm's icebox.pinloc_db), and the device's LUTs and BRAMs.
case "$DEVICE-$PACKAGE" in
  hx8k-ct256) PINS=206 ;; hx8k-cm225) PINS=178 ;; hx8k-tq144) PINS=107 ;; hx8k-cb132) PINS=95 ;;
  hx8k-cm121|hx8k-bg121) PINS=93 ;; hx8k-cm81) PINS=63 ;;
  up5k-sg48) PINS=39 ;; up5k-uwg30) PINS=21 ;;
  *) die "--package '$PACKAGE': not an $DEVICE package (see --help)" ;;
esac
case "$DEVICE" in hx8k) DEV_LUTS=7680; DEV_BRAMS=32 ;; up5k) DEV_LUTS=5280; DEV_BRAMS=30 ;; esac
[[ "$FREQ" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--freq '$FREQ': a frequency in MHz"
[[ "$SEED" =~ ^[0-9]+$ ]] || die "--seed '$SEED': a number"
case "$WRAP" in auto|yes|no) ;; *) die "--wrap '$WRAP': auto, yes or no" ;; esac
for p in "${params[@]}"; do
  [[ "$p" =~ ^[A-Za-z_][A-Za-z0-9_]*=.+$ ]] || die "--param '$p': NAME=VALUE"
done
for c in "${clocks[@]}"; do
  [[ "$c" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "--clock '$c': not a port name"
done
for d in "${incs[@]}"; do [ -d "$d" ] || die "--inc $d: no such folder"; done
for f in "${files[@]}"; do [ -f "$f" ] || die "$f: no such file"; done
for t in yosys nextpnr-ice40 icepack; do
  command -v "$t" >/dev/null || die "$t not found (Debian packages yosys, nextpnr-ice40, fpga-icestorm; ./mxtb installs them)"
done
command -v jq >/dev/null || die "jq not found (Debian package jq), needed to read nextpnr's report"

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
start=$(date +%s.%N)
inc_flags=""
for d in "${incs[@]}"; do inc_flags+=" -I$d"; done
chp=""
for p in "${params[@]}"; do chp+="chparam -set ${p%%=*} ${p#*=} $TOP; "; done
rm -f "$OUT/$TOP".{json,asc,bin} "$OUT/$TOP"-{report.json,ice40.tsv,synth-stat.txt,icetime.txt,ports.txt}

# 1. TOP's ports at the given parameters: how many pins it needs, and the wrapper's connections.
if ! yosys -q -l "$OUT/$TOP-ports.log" -p "read_verilog -sv$inc_flags ${files[*]}; $chp\
    hierarchy -check -top $TOP; tee -q -o $OUT/$TOP-ports.txt portlist $TOP" > /dev/null 2>&1; then
  grep -E "ERROR|error" "$OUT/$TOP-ports.log" | head -5 >&2 || true
  fail "Yosys could not read $TOP (log: $OUT/$TOP-ports.log)"
fi
port_dirs=(); port_widths=(); port_names=()
total_bits=0
while read -r dir range name; do
  case "$dir" in input|output|inout) ;; *) continue ;; esac
  range="${range#[}"; range="${range%]}"
  msb="${range%%:*}"; lsb="${range##*:}"
  w=$(( msb > lsb ? msb - lsb + 1 : lsb - msb + 1 ))
  port_dirs+=("$dir"); port_widths+=("$w"); port_names+=("$name")
  total_bits=$((total_bits + w))
done < "$OUT/$TOP-ports.txt"
[ ${#port_names[@]} -gt 0 ] || fail "Yosys listed no ports of $TOP (see $OUT/$TOP-ports.txt)"

is_clock() {  # is_clock NAME WIDTH DIR
  local n="$1"
  [ "$3" = input ] && [ "$2" = 1 ] || return 1
  if [ ${#clocks[@]} -gt 0 ]; then
    for c in "${clocks[@]}"; do [ "$c" = "$n" ] && return 0; done
    return 1
  fi
  [[ "${n,,}" =~ ^(clk|clock)(_i|_in)?$|_(clk|clock)(_i|_in)?$|^i_(clk|clock)$ ]]
}
for c in "${clocks[@]}"; do
  found=0
  for i in "${!port_names[@]}"; do
    [ "${port_names[$i]}" = "$c" ] && [ "${port_dirs[$i]}" = input ] && [ "${port_widths[$i]}" = 1 ] && found=1
  done
  [ $found = 1 ] || die "--clock $c: $TOP has no 1-bit input of that name"
done

if [ "$WRAP" = auto ]; then
  if [ "$total_bits" -gt "$PINS" ]; then WRAP=yes; else WRAP=no; fi
fi
SYN_TOP="$TOP"
wrapper=""
if [ "$WRAP" = yes ]; then
  # 2. The out-of-context wrapper (see the header).
  SYN_TOP="${TOP}_ooc"
  wrapper="$OUT/$SYN_TOP.v"
  n_in=0; n_out=0; clk_pins=(); conns=()
  for i in "${!port_names[@]}"; do
    n="${port_names[$i]}"; w="${port_widths[$i]}"
    case "${port_dirs[$i]}" in
      inout) die "$TOP: inout port '$n': the out-of-context wrapper handles inputs and outputs only (--wrap no)" ;;
      input)
        if is_clock "$n" "$w" input; then clk_pins+=("$n"); conns+=("    .$n($n)")
        else conns+=("    .$n(in_q[$((n_in + w - 1)):$n_in])"); n_in=$((n_in + w)); fi ;;
      output) conns+=("    .$n(out_w[$((n_out + w - 1)):$n_out])"); n_out=$((n_out + w)) ;;
    esac
  done
  [ "$n_out" -gt 0 ] || die "$TOP has no outputs: nothing would be left after synthesis"
  [ ${#clk_pins[@]} -gt 0 ] || clk_pins=(ooc_clk)  # no clock input: the wrapper's registers get one
  sclk="${clk_pins[0]}"
  {
    echo "// Generated by rtl/fpga/ice40.sh: $TOP out of context, its $total_bits port bits behind"
    echo "// ${#clk_pins[@]} clock pin(s) and three more; every path of $TOP starts and ends at a register."
    echo "module $SYN_TOP ("
    for c in "${clk_pins[@]}"; do echo "  input  wire $c,"; done
    echo "  input  wire ooc_sin,"
    echo "  input  wire ooc_load,"
    echo "  output wire ooc_sout"
    echo ");"
    [ "$n_in" -gt 0 ] && echo "  reg  [$((n_in - 1)):0] in_q;"
    echo "  reg  [$((n_out - 1)):0] out_q;"
    echo "  wire [$((n_out - 1)):0] out_w;"
    echo "  always @(posedge $sclk) begin"
    [ "$n_in" -gt 1 ] && echo "    in_q  <= {in_q[$((n_in - 2)):0], ooc_sin};"
    [ "$n_in" -eq 1 ] && echo "    in_q  <= ooc_sin;"
    if [ "$n_out" -gt 1 ]; then echo "    out_q <= ooc_load ? out_w : {out_q[$((n_out - 2)):0], 1'b0};"
    else echo "    out_q <= ooc_load ? out_w : 1'b0;"; fi
    echo "  end"
    echo "  assign ooc_sout = out_q[$((n_out - 1))];"
    echo "  $TOP core ("
    for ((i = 0; i < ${#conns[@]}; i++)); do
      [ $i -lt $((${#conns[@]} - 1)) ] && echo "${conns[$i]}," || echo "${conns[$i]}"
    done
    echo "  );"
    echo "endmodule"
  } > "$wrapper"
fi

# 3. Synthesis. keep_hierarchy keeps TOP a module of its own inside the wrapper.
keep=""
[ "$WRAP" = yes ] && keep="setattr -mod -set keep_hierarchy 1 $TOP; "
if ! yosys -q -l "$OUT/$TOP-synth.log" -p "read_verilog -sv$inc_flags ${files[*]} $wrapper; $chp\
    hierarchy -check -top $SYN_TOP; ${keep}synth_ice40 -top $SYN_TOP -json $OUT/$TOP.json; \
    tee -q -o $OUT/$TOP-synth-stat.txt stat" > /dev/null 2>&1; then
  grep -E "ERROR" "$OUT/$TOP-synth.log" | head -5 >&2 || true
  fail "Yosys synth_ice40 failed (log: $OUT/$TOP-synth.log)"
fi
# TOP's own section of the statistics ("=== TOP ===" up to the next "===").
count_cells() {  # count_cells REGEX: sum of the counts of TOP's cells whose type matches
  awk -v top="=== $TOP ===" -v re="$1" '
    $0 ~ /^=== / { in_top = ($0 == top) ; next }
    in_top && $1 ~ re && $2 ~ /^[0-9]+$/ { n += $2 }
    END { print n + 0 }' "$OUT/$TOP-synth-stat.txt"
}
luts=$(count_cells '^SB_LUT4$')
ffs=$(count_cells '^SB_DFF')
brams=$(count_cells '^SB_RAM40_4K')
carries=$(count_cells '^SB_CARRY$')

# 4. Place and route. No PCF: nextpnr places the IOs itself ("No PCF file specified").
if ! nextpnr-ice40 "--$DEVICE" --package "$PACKAGE" --json "$OUT/$TOP.json" --asc "$OUT/$TOP.asc" \
    --freq "$FREQ" --seed "$SEED" --timing-allow-fail --report "$OUT/$TOP-report.json" \
    > "$OUT/$TOP-pnr.log" 2>&1; then
  grep -E "^ERROR" "$OUT/$TOP-pnr.log" | head -5 >&2 || true
  fail "nextpnr-ice40 failed (log: $OUT/$TOP-pnr.log)"
fi
# 5. Bitstream.
icepack "$OUT/$TOP.asc" "$OUT/$TOP.bin" > "$OUT/$TOP-icepack.log" 2>&1 ||
  fail "icepack failed (log: $OUT/$TOP-icepack.log)"

# nextpnr's report: {"fmax": {CLOCK: {"achieved": MHz, "constraint": MHz}}, "utilization": {...}}
mapfile -t fmax_lines < <(jq -r '(.fmax // {}) | to_entries[] | "\(.key)\t\(.value.achieved)"' "$OUT/$TOP-report.json")
fmax="-"
for l in "${fmax_lines[@]}"; do
  f="${l##*$'\t'}"
  if [ "$fmax" = "-" ] || awk -v a="$f" -v b="$fmax" 'BEGIN { exit !(a < b) }'; then fmax="$f"; fi
done
[ "$fmax" = "-" ] || fmax=$(printf '%.1f' "$fmax")
lc_used=$(jq -r '.utilization.ICESTORM_LC.used // "?"' "$OUT/$TOP-report.json")
io_used=$(jq -r '.utilization.SB_IO.used // "?"' "$OUT/$TOP-report.json")

# 6. A second timing opinion: icetime's topological analysis of the routed design (-m: the
# conservative span estimate; -i: paths inside the chip, not to and from its pins).
icetime_line="not run (icetime not found)"
if command -v icetime >/dev/null; then
  if icetime -d "$DEVICE" -P "$PACKAGE" -m -i -t -r "$OUT/$TOP-icetime.txt" "$OUT/$TOP.asc" \
      > "$OUT/$TOP-icetime.log" 2>&1; then
    icetime_line=$(grep -oE "Total path delay: .*" "$OUT/$TOP-icetime.txt" | tail -1)
    [ -n "$icetime_line" ] || icetime_line="no path delay in $OUT/$TOP-icetime.txt"
  elif grep -q "contains no paths" "$OUT/$TOP-icetime.log"; then
    icetime_line="no register-to-register paths"
  elif grep -q "Can't find chipdb" "$OUT/$TOP-icetime.log"; then
    icetime_line="not run: no chip database (Debian package fpga-icestorm-chipdb); nextpnr's figure stands"
  else
    icetime_line="failed (log: $OUT/$TOP-icetime.log); nextpnr's figure stands"
  fi
fi

printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$TOP" "$DEVICE" "$luts" "$ffs" "$brams" "$fmax" > "$OUT/$TOP-ice40.tsv"
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
if [ "$WRAP" = yes ]; then how="out of context: $total_bits port bits, $PINS pins; wrapper $wrapper"
else how="$total_bits port bits on $PINS pins, placed by nextpnr"; fi
echo "ice40: $TOP$([ ${#params[@]} -gt 0 ] && echo " (${params[*]})") on $DEVICE-$PACKAGE ($how)"
echo "  $TOP: $luts LUT4 of $DEV_LUTS, $ffs FF, $brams BRAM of $DEV_BRAMS, $carries SB_CARRY (Yosys synth_ice40)"
echo "  placed design: $lc_used logic cells, $io_used IOs (nextpnr; with the wrapper when there is one)"
for l in "${fmax_lines[@]}"; do
  clk="${l%%$'\t'*}"  # nextpnr names the net after the buffers: clk_i$SB_IO_IN_$glb_clk
  f="${l##*$'\t'}"
  verdict=$(awk -v a="$f" -v b="$FREQ" 'BEGIN { print (a >= b ? "met" : "missed") }')
  printf '  fmax %s: %.1f MHz (nextpnr; target %s MHz %s)\n' "${clk%%\$*}" "$f" "$FREQ" "$verdict"
done
[ ${#fmax_lines[@]} -gt 0 ] || echo "  fmax: none (no clocked paths)"
echo "  icetime: $icetime_line"
echo "  flow: ${secs}s; bitstream $OUT/$TOP.bin; figures $OUT/$TOP-ice40.tsv"
