#!/usr/bin/env bash
# The GPU checks, for a machine with a CUDA device: configure, build, run the gpu-label tests, the
# full `bench paging`, the communicator's tests (host.comm, with the NCCL backend's device cases) and
# one NCCL rank through `mxtb rank`; keep the logs and figures under $OUT (or out/gpu-checks).
# Usage, from anywhere: cuda/run_gpu_checks.sh   (MXTB_JOBS sets the build jobs; default: all cores)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/out/gpu-checks}
build=${MXTB_BUILD_DIR:-$root/build}
mkdir -p "$out"
cd "$root"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed (no driver?)" >> "$out/nvidia-smi.txt"
status=0
# Only what the GPU checks need: the mxtb program (bench, rank) and the test binaries run below.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release > "$out/configure.log" 2>&1 || { echo "configure failed: $out/configure.log"; exit 1; }
grep -q "mxtb: CUDA ON" "$out/configure.log" || { echo "CUDA not found by CMake (see $out/configure.log)"; exit 1; }
# Without NCCL the paging checks still run; the NCCL ones below then fail, and so does the script.
grep -q "mxtb: NCCL ON" "$out/configure.log" || { echo "NCCL not found by CMake (see $out/configure.log)"; status=1; }
cmake --build "$build" -j"${MXTB_JOBS:-$(nproc)}" --target mxtb gpu_smoke gpu_paging paging_tests comm_tests > "$out/build.log" 2>&1 \
  || { echo "build failed: tail of $out/build.log"; tail -30 "$out/build.log"; exit 1; }
# A skipped gpu test (exit 77) is a failure here: this script is only run where a GPU exists.
ctest --test-dir "$build" -L gpu --output-on-failure --no-tests=error 2>&1 | tee "$out/ctest-gpu.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
grep -q "Skipped" "$out/ctest-gpu.log" && { echo "a gpu test was skipped: no device seen"; status=1; }
ctest --test-dir "$build" -R '^paging$' --output-on-failure 2>&1 | tee "$out/ctest-paging.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
"$build/mxtb" bench paging --json "$out/bench-paging.json" 2>&1 | tee "$out/bench-paging.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
# The communicator: Gloo, and NCCL's device cases (one-rank exact all-reduce, a unique id that never comes).
ctest --test-dir "$build" -R '^host.comm$' --output-on-failure 2>&1 | tee "$out/ctest-comm.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
# One NCCL rank through the rank protocol, as the failover manager drives it: the answer to the
# all-reduce must be `done <ns> 0` (no element wrong). The rank bounds its own waits (10 s).
rm -rf "$out/nccl-store"
printf 'form g1 0 1\nallreduce 65536 7\nexit\n' | timeout 120 "$build/mxtb" rank --library nccl --store "$out/nccl-store" \
  > "$out/nccl-rank.txt" 2>&1
rc=$?
cat "$out/nccl-rank.txt"
{ [ "$rc" -eq 0 ] && grep -Eq '^done [0-9]+ 0$' "$out/nccl-rank.txt"; } \
  || { echo "nccl rank check failed (exit $rc): want 'done <ns> 0' in $out/nccl-rank.txt"; status=1; }
echo "results in $out (exit $status)"
exit $status
