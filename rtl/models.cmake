# Every verilated model of the build, in one table. Included by rtl/CMakeLists.txt once the source
# lists (LINK_SV, IPBUS_SV, OCS_SV, BOARD_SV, ...) and Verilator's arguments and options are set.
# Other folders link the libraries by name (mxtb_rtl_*) and include a model's header by its prefix
# ("Vlink_endpoint.h").
#
# mxtb_model(LIBRARY PREFIX TOP SOURCES ARGS OPTS [PARAMS NAME=VALUE...] [TRACE_FST] [LINKS LIB...])
#   verilates module TOP from the files in the list variable SOURCES into the class PREFIX of the
#   static library LIBRARY, which the library's first model creates (a library may hold several;
#   its headers are system headers to its users: Verilator's are not -Wextra clean). Verilator gets
#   the list variable ARGS, then -GNAME=VALUE for each of PARAMS; the list variable OPTS holds
#   verilate()'s OPT_FAST, OPT_SLOW and OPT_GLOBAL flags for the generated C++. TRACE_FST: FST
#   tracing. LINKS: what LIBRARY links, PUBLIC.
#
# The arguments (rtl/CMakeLists.txt, cmake/coverage.cmake):
#   VL_ARGS           every model's: assertions on; with --coverage in a coverage build
#   VL_ARGS_NOASSERT  the same without the assertions (and never with --coverage)
#   VL_ARGS_COVERAGE  VL_ARGS and --coverage, in every build
# The options:
#   VL_OPTS           -O2 (and -march=MXTB_RTL_ARCH) per cycle; -O1 in a coverage build
#   VL_OPTS_REFERENCE the options before the emulator was tuned
#   VL_OPTS_COV_LONG  for a coverage variant that runs long (-O2)
#   VL_OPTS_COV_SHORT for one that runs for seconds and builds fastest so (-O0)
function(mxtb_model library prefix top sources args opts)
  cmake_parse_arguments(MODEL "TRACE_FST" "" "PARAMS;LINKS" ${ARGN})
  if(MODEL_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "mxtb_model(${library} ${prefix}): unexpected arguments ${MODEL_UNPARSED_ARGUMENTS}")
  endif()
  foreach(list ${sources} ${args} ${opts})
    if(NOT DEFINED ${list})
      message(FATAL_ERROR "mxtb_model(${library} ${prefix}): ${list} is not set")
    endif()
  endforeach()
  if(NOT TARGET ${library})
    add_library(${library} STATIC)
    set_target_properties(${library} PROPERTIES SYSTEM ON)
  endif()
  set(vl_args ${${args}})
  foreach(p ${MODEL_PARAMS})
    list(APPEND vl_args -G${p})
  endforeach()
  set(trace "")
  if(MODEL_TRACE_FST)
    set(trace TRACE_FST)
  endif()
  verilate(${library} SOURCES ${${sources}} TOP_MODULE ${top} PREFIX ${prefix} ${trace}
    VERILATOR_ARGS ${vl_args} ${${opts}})
  if(MODEL_LINKS)
    target_link_libraries(${library} PUBLIC ${MODEL_LINKS})
  endif()
endfunction()

# The shrunk controller: 8 ports, 20 elements, 4 links, 8 events, short timers.
set(OCS_SMALL_PARAMS N_PORTS=8 N_ELEMS=20 N_LINKS=4 EVENT_DEPTH=8
  UPDATE_CYCLES_RESET=4 SETTLE_CYCLES_RESET=50 PD_TIMEOUT_RESET=32)
# The shrunk board top: that controller's ports, elements and links, 256 RAM words, 4 reply buffers.
set(BOARD_SMALL_PARAMS N_PORTS=8 N_ELEMS=20 N_LINKS=4 RAM_WORDS=256 N_BUFFERS=4)

#          library                prefix                  top               sources           args             opts

# ---- The link endpoint (docs/link-layer.md) ----
# Runs and benchmarks (link-pair, the emulator's fast engine, the directed testbenches): no tracing.
mxtb_model(mxtb_rtl_link          Vlink_endpoint          link_endpoint     LINK_SV           VL_ARGS          VL_OPTS)
# Waveform runs (--fst): FST tracing costs about a third of the speed even when not dumping.
mxtb_model(mxtb_rtl_link_trace    Vlink_endpoint_trace    link_endpoint     LINK_SV           VL_ARGS          VL_OPTS
  TRACE_FST)
# Only for `mxtb bench link`, which measures what the assertions cost: the same without them.
mxtb_model(mxtb_rtl_link_noassert Vlink_endpoint_noassert link_endpoint     LINK_SV           VL_ARGS_NOASSERT VL_OPTS)
if(MXTB_REFERENCE_MODELS)
  # The reference engine (ServerEngine::Reference), which `mxtb bench server` and the equivalence
  # tests run beside the fast one.
  mxtb_model(mxtb_rtl_link_ref    Vlink_endpoint_ref      link_endpoint     LINK_SV           VL_ARGS          VL_OPTS_REFERENCE)
endif()

# ---- Per-module test models (testbench/rtl: rtl_modules): small, so each builds in seconds ----
# The CRC-32 masks, against the software CRC.
mxtb_model(mxtb_rtl_units         Vcrc32_d64              crc32_d64         CRC32_SV          VL_ARGS          VL_OPTS)
# Scrambler and descrambler back to back, against the bit-serial reference.
mxtb_model(mxtb_rtl_units         Vscrambler_pair_tb      scrambler_pair_tb SCRAMBLER_PAIR_SV VL_ARGS          VL_OPTS)
# The transmitter alone, driven against its assumptions: a failed assertion must stop the model and
# name itself (docs/verification.md).
mxtb_model(mxtb_rtl_units         Vlink_tx                link_tx           LINK_TX_SV        VL_ARGS          VL_OPTS)
# Block lock at every bit offset, with short lock and unlock counts.
mxtb_model(mxtb_rtl_units         Vlink_block_lock        link_block_lock   BLOCK_LOCK_SV     VL_ARGS          VL_OPTS
  PARAMS LOCK_GOOD=16 UNLOCK_BAD=8)

# ---- IPbus transactor (docs/ipbus-rtl.md) ----
# The board's IPbus 2.0 target, for the differential harness against the C++ target
# (testbench/protocol).
mxtb_model(mxtb_rtl_ipbus         Vipbus_transactor       ipbus_transactor  IPBUS_SV          VL_ARGS          VL_OPTS)
# Three reply buffers: the ring of kept replies wraps at a count that is not a power of two,
# which no other model or proof has (2, 4 and 16 wrap by overflow alone, so a wrong wrap passes).
mxtb_model(mxtb_rtl_ipbus_b3      Vipbus_transactor_b3    ipbus_transactor  IPBUS_SV          VL_ARGS          VL_OPTS
  PARAMS N_BUFFERS=3)

# ---- Optical switch controller (docs/ocs-controller.md) ----
# Default parameters (32 ports, 144 elements, 20 links): the SystemC integration; rtl_ocs's smoke
# test.
mxtb_model(mxtb_rtl_ocs           Vocs_controller         ocs_controller    OCS_SV            VL_ARGS          VL_OPTS
  LINKS mxtb_defs)
# Shrunk, for the directed testbenches (testbench/rtl: rtl_ocs).
mxtb_model(mxtb_rtl_ocs_small     Vocs_ctl_small          ocs_controller    OCS_SV            VL_ARGS          VL_OPTS
  PARAMS ${OCS_SMALL_PARAMS} LINKS mxtb_defs)

# ---- The board top (docs/board.md), as the emulator's server engines clock it with the link layers
# (sim/server/engine.h) ----
# Defaults: 32 ports, 144 elements, 20 links, 4,096 RAM words, 16 reply buffers, EMU_PORT.
mxtb_model(mxtb_rtl_board         Vmxtb_board             mxtb_board        BOARD_SV          VL_ARGS          VL_OPTS
  LINKS mxtb_defs)
# The waveform window (mxtb sim --fst).
mxtb_model(mxtb_rtl_board_trace   Vmxtb_board_trace       mxtb_board        BOARD_SV          VL_ARGS          VL_OPTS
  TRACE_FST LINKS mxtb_defs)
# The widest server the controller serves, 8 XPUs x 4 lanes on the 32-port mesh, for `mxtb bench
# server --xpus 8` (N_LINKS is at most 32: the LINK_STATUS window and the link buses; a 64-port
# Benes mesh has 352 elements, beyond the 256 that N_ELEMS, dac_elem_o and the DAC windows allow).
mxtb_model(mxtb_rtl_board_l32     Vmxtb_board_l32         mxtb_board        BOARD_SV          VL_ARGS          VL_OPTS
  PARAMS N_LINKS=32 LINKS mxtb_defs)
if(MXTB_REFERENCE_MODELS)
  # The reference engine's build.
  mxtb_model(mxtb_rtl_board_ref   Vmxtb_board_ref         mxtb_board        BOARD_SV          VL_ARGS          VL_OPTS_REFERENCE
    LINKS mxtb_defs)
endif()
# Shrunk, for its directed test (testbench/rtl/test_board.cpp: rtl_board).
mxtb_model(mxtb_rtl_board_small   Vmxtb_board_small       mxtb_board        BOARD_SV          VL_ARGS          VL_OPTS
  PARAMS ${BOARD_SMALL_PARAMS} LINKS mxtb_defs)

# ---- Coverage variants, in every build (docs/coverage.md): under their ordinary prefixes, so that
# their testbenches compile against them unchanged; they write their counters
# (mxtb_rtl_coverage_on) ----
# The transactor, for the differential harness (testbench/protocol: ipbus_rtl_diff_tests_cov, the
# coverage_ipbus test), which runs 10^5 datagrams through it.
mxtb_model(mxtb_rtl_ipbus_cov     Vipbus_transactor       ipbus_transactor  IPBUS_SV          VL_ARGS_COVERAGE VL_OPTS_COV_LONG
  LINKS mxtb_rtl_coverage_on)
# The shrunk controller, for its directed testbench (testbench/rtl: rtl_ocs_tests_cov, the
# coverage_smoke test), which runs for seconds.
mxtb_model(mxtb_rtl_ocs_small_cov Vocs_ctl_small          ocs_controller    OCS_SV            VL_ARGS_COVERAGE VL_OPTS_COV_SHORT
  PARAMS ${OCS_SMALL_PARAMS} LINKS mxtb_defs mxtb_rtl_coverage_on)

# Declared elsewhere: mxtb_rtl_link_broken (testbench/apps/mxtb/CMakeLists.txt), the link endpoint
# verilated from a copy of rtl/link with one deliberate break, under the real prefixes
# (Vlink_endpoint, Vlink_endpoint_trace), for the assertion end-to-end tests
# (rtl_assert_end_to_end*).
