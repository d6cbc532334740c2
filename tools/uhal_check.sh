#!/usr/bin/env bash
# uHAL itself against `mxtb sim`: for each IPbus target (default: rtl and cpp), start the emulator
# on a free loopback port, write the address table and connections file with `mxtb reg uhal`, and
# run mxtb_uhal_check (tools/uhal_check.cpp) through them. docs/protocol.md, "uHAL".
#   tools/uhal_check.sh MXTB MXTB_UHAL_CHECK WORKDIR [rtl|cpp ...]
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 MXTB MXTB_UHAL_CHECK WORKDIR [rtl|cpp ...]" >&2
  exit 2
fi
mxtb=$1 check=$2 work=$3
shift 3
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(rtl cpp)
mkdir -p "$work"
sim_pid=
trap '[ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null; true' EXIT
for target in "${targets[@]}"; do
  log="$work/sim-$target.log"
  "$mxtb" sim --listen 127.0.0.1:0 --time-mode lockstep --ipbus-target "$target" >"$log" 2>&1 &
  sim_pid=$!
  addr=
  for _ in $(seq 300); do
    addr=$(sed -n 's|^listening on udp://||p' "$log")
    [ -n "$addr" ] && break
    kill -0 "$sim_pid" 2>/dev/null || { echo "mxtb sim --ipbus-target $target exited before listening:" >&2; cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$addr" ] || { echo "mxtb sim --ipbus-target $target: no 'listening on' line within 30 s ($log)" >&2; exit 1; }
  "$mxtb" reg uhal --out "$work" --target "udp://$addr" --id "mxtb.$target" >/dev/null
  echo "== --ipbus-target $target (udp://$addr)"
  "$check" "file://$work/connections.xml" "mxtb.$target"
  kill "$sim_pid"
  wait "$sim_pid" 2>/dev/null || true
  sim_pid=
done
