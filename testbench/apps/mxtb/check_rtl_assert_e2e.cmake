# A failed RTL assertion seen from outside the program. `mxtb VERB ARGS`, built against the
# deliberately broken link endpoint (testbench/apps/mxtb/CMakeLists.txt), must
#   - exit with status 1 (demo: its error passes on what the emulator child printed and its log),
#   - let Verilator name the assertion (tx_replay_occupancy) and its instance (a.link_endpoint.u_tx
#     in a link pair, link<N>.link_endpoint.u_tx in the emulator),
#   - say by which cycle it failed,
#   - print the command that reruns it: for link-pair with the --fst window of the 2,000 cycles
#     before the failure, for sim with the traced models (--fst); for demo, the child's `mxtb sim`
#     line (the demo's scenario.json, lockstep);
# and that command, run as printed, must fail the same way, in the same instance, at the same
# cycle, and print the same rerun line. A link-pair rerun must also write an FST file whose time
# range is exactly the window (the emulator dumps only the window its host asks for).
#
#   cmake -DMXTB=<the broken-link mxtb> -DOUT=<folder> -DVERB=link-pair "-DARGS=--random 1"
#         -P check_rtl_assert_e2e.cmake
#
# ARGS: the command's arguments as one shell word list (nothing in them needs quoting).
# The runs happen in OUT, where ./mxtb is a link to MXTB, so the rerun line runs exactly as printed.
cmake_minimum_required(VERSION 3.25)
foreach(v MXTB OUT VERB ARGS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "give -D${v}=...")
  endif()
endforeach()
if(NOT VERB MATCHES "^(link-pair|sim|demo)$")
  message(FATAL_ERROR "VERB must be link-pair, sim or demo, got '${VERB}'")
endif()
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
file(CREATE_LINK ${MXTB} ${OUT}/mxtb SYMBOLIC)
set(assertion tx_replay_occupancy)
set(wave_cycles 2000)  # apps/mxtb/rtl_rerun.h: kAssertWaveCycles

# Runs LINE with sh in OUT; sets <prefix>_rc, <prefix>_out (stdout and stderr, in order).
function(run_line prefix line)
  message("$ ${line}")
  execute_process(COMMAND sh -c "${line} 2>&1" WORKING_DIRECTORY ${OUT}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  message("${out}(exit status ${rc})")
  set(${prefix}_rc "${rc}" PARENT_SCOPE)
  set(${prefix}_out "${out}" PARENT_SCOPE)
endfunction()

# Checks one failed run whose models ran in `mxtb VERB_RUN` (for demo: its sim child); sets
# <prefix>_cycle, <prefix>_instance and <prefix>_rerun.
function(check_failure prefix verb_run rc out)
  if(NOT rc EQUAL 1)
    message(FATAL_ERROR "${prefix}: exit status ${rc}, expected 1 (a failed RTL assertion)")
  endif()
  # Verilator's line: %Error: <file>:<line>: Assertion failed in <instance>.<name>: ...
  if(NOT out MATCHES "%Error: [^\n]*link_tx\\.sv:[0-9]+: Assertion failed in ([a-z0-9_]+\\.link_endpoint\\.u_tx)\\.${assertion}")
    message(FATAL_ERROR "${prefix}: no Verilator line naming ${assertion} and its instance (<model>.link_endpoint.u_tx)")
  endif()
  set(instance ${CMAKE_MATCH_1})
  if(NOT out MATCHES "%Error: [^\n]*link_tx\\.sv:[0-9]+: Verilog \\$stop")
    message(FATAL_ERROR "${prefix}: no Verilator '$stop' line")
  endif()
  string(REGEX MATCHALL "Assertion failed in" all "${out}")
  list(LENGTH all n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "${prefix}: ${n} failed assertions reported; the run must stop at the first")
  endif()
  if(NOT out MATCHES "mxtb ${verb_run}: error: RTL assertion failed by cycle ([0-9]+) \\(Verilator's %Error line above names it and its instance\\)\n +rerun: ([^\n]*)\n")
    message(FATAL_ERROR "${prefix}: no 'mxtb ${verb_run}: error: RTL assertion failed by cycle N' line followed by the rerun line")
  endif()
  set(cycle ${CMAKE_MATCH_1})
  set(rerun "${CMAKE_MATCH_2}")
  if(out MATCHES "\nPASS |\nFAIL: |listening on ")
    message(FATAL_ERROR "${prefix}: the run went on after the assertion failed")
  endif()
  set(${prefix}_cycle ${cycle} PARENT_SCOPE)
  set(${prefix}_instance ${instance} PARENT_SCOPE)
  set(${prefix}_rerun "${rerun}" PARENT_SCOPE)
endfunction()

set(cmd "./mxtb ${VERB} ${ARGS}")
run_line(first "${cmd}")
set(verb_run ${VERB})
if(VERB STREQUAL "demo")
  set(verb_run sim)
  if(NOT first_out MATCHES "mxtb demo: error: [^\n]*/mxtb sim exited with status 1 before listening\n")
    message(FATAL_ERROR "first: mxtb demo does not say that its emulator child exited with status 1")
  endif()
endif()
check_failure(first ${verb_run} "${first_rc}" "${first_out}")

# The rerun line: the same command, and for link-pair the window [cycle - 2000, cycle + 1) into
# rtl-assert.fst.
if(VERB STREQUAL "link-pair")
  math(EXPR from "${first_cycle} - ${wave_cycles}")
  if(from LESS 0)
    set(from 0)
  endif()
  math(EXPR to "${first_cycle} + 1")
  set(expected "${cmd} --fst rtl-assert.fst --fst-from ${from} --fst-to ${to}")
elseif(VERB STREQUAL "sim")
  set(expected "${cmd} --fst rtl-assert.fst")
else()
  # The demo's child: its scenario as the demo wrote it, lockstep, the IPbus target the demo
  # resolved (apps/mxtb/demo.cpp), so that the rerun does not depend on the environment.
  if(NOT ARGS MATCHES "--out ([^ ]+)")
    message(FATAL_ERROR "demo ARGS must give --out DIR")
  endif()
  set(expected "./mxtb sim --scenario ${CMAKE_MATCH_1}/scenario.json --time-mode lockstep --ipbus-target rtl --fst rtl-assert.fst")
endif()
if(NOT first_rerun STREQUAL expected)
  message(FATAL_ERROR "rerun line:\n  ${first_rerun}\nexpected:\n  ${expected}")
endif()

# Run it as printed: same failure, same cycle, same instance, and the same rerun line again.
run_line(again "${first_rerun}")
check_failure(again ${verb_run} "${again_rc}" "${again_out}")
if(NOT again_cycle EQUAL first_cycle OR NOT again_instance STREQUAL first_instance)
  message(FATAL_ERROR "the rerun failed in ${again_instance} by cycle ${again_cycle}; "
                      "the first run in ${first_instance} by cycle ${first_cycle}")
endif()
if(NOT again_rerun STREQUAL first_rerun)
  message(FATAL_ERROR "the rerun printed another rerun line:\n  ${again_rerun}")
endif()
if(NOT VERB STREQUAL "link-pair")
  message(STATUS "rtl_assert_end_to_end: mxtb ${VERB}: ${assertion} in ${first_instance} by cycle ${first_cycle}, "
                 "exit status 1 twice, rerun as printed")
  return()
endif()

# The waveform: an FST file whose header's time range is the window. link_pair.cpp dumps cycle c
# at times 2c+1 and 2c+2; the last cycle dumped is the failing one (cycle - 1, counted from 0).
set(fst ${OUT}/rtl-assert.fst)
if(NOT EXISTS ${fst})
  message(FATAL_ERROR "the rerun wrote no ${fst}")
endif()
file(SIZE ${fst} size)
if(size LESS 1000)
  message(FATAL_ERROR "${fst} is only ${size} bytes")
endif()
# FST header block (GTKWave's fstapi.c): type byte 0, 8-byte length, start time, end time
# (unsigned 64-bit big-endian).
file(READ ${fst} head LIMIT 25 HEX)
string(SUBSTRING "${head}" 0 2 block)
if(NOT block STREQUAL "00")
  message(FATAL_ERROR "${fst} does not start with an FST header block")
endif()
string(SUBSTRING "${head}" 18 16 start_hex)
string(SUBSTRING "${head}" 34 16 end_hex)
math(EXPR start_time "0x${start_hex}")
math(EXPR end_time "0x${end_hex}")
if(from EQUAL 0)
  set(want_start 1)  # the reset clocks are dumped at cycle 0 too
else()
  math(EXPR want_start "2 * ${from} + 1")
endif()
math(EXPR want_end "2 * ${first_cycle}")
if(NOT start_time EQUAL want_start OR NOT end_time EQUAL want_end)
  message(FATAL_ERROR "${fst} covers times ${start_time}..${end_time}; the window "
                      "[${from}, ${to}) needs ${want_start}..${want_end}")
endif()
message(STATUS "rtl_assert_end_to_end: mxtb ${VERB}: ${assertion} in ${first_instance} by cycle ${first_cycle}, "
               "exit status 1 twice, rerun as printed, ${fst} (${size} bytes) covers times ${start_time}..${end_time}")
