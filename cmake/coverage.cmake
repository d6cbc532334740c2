# Coverage (docs/coverage.md), included by rtl/CMakeLists.txt once VL_ARGS and VL_OPTS are set.
#
# -DMXTB_COVERAGE=ON, in a build directory of its own (`mxtb cover` uses build-cover/): every
# verilated model gets Verilator's --coverage (line, toggle and the RTL's COVER points), and every
# program that owns models writes their counters under $MXTB_COVERAGE_DIR (rtl/cov/coverage_dump.h).
# The ordinary build keeps its fast models; it only adds the small coverage variant below, for the
# coverage smoke test.
option(MXTB_COVERAGE "Build every verilated model with coverage (line, toggle, COVER points)" OFF)
if(MXTB_COVERAGE)
  list(APPEND VL_ARGS --coverage)
  # Counting makes the per-cycle code slower whatever the optimiser does; -O1 builds faster.
  set(VL_OPTS OPT_FAST -O1 OPT_SLOW -O1 OPT_GLOBAL -O1)
endif()

function(mxtb_coverage_dump_library name enabled)
  add_library(${name} STATIC ${CMAKE_SOURCE_DIR}/rtl/cov/coverage_dump.cpp)
  target_include_directories(${name} PUBLIC ${CMAKE_SOURCE_DIR})
  target_include_directories(${name} SYSTEM PRIVATE ${VERILATOR_ROOT}/include ${VERILATOR_ROOT}/include/vltstd)
  if(enabled)
    target_compile_definitions(${name} PRIVATE MXTB_COVERAGE=1 VM_COVERAGE=1)
  endif()
  mxtb_warnings(${name})
endfunction()
# What programs that own models link: writes only in a coverage build.
mxtb_coverage_dump_library(mxtb_rtl_coverage ${MXTB_COVERAGE})
# Always writes: for the coverage variant below.
mxtb_coverage_dump_library(mxtb_rtl_coverage_on ON)

# The shrunk controller with coverage, under its ordinary prefix so that the directed testbench
# compiles against it unchanged (testbench/rtl: rtl_ocs_tests_cov, the `coverage` smoke test).
# -O0: it runs for seconds, and builds fastest so.
# The same parameters as mxtb_rtl_ocs_small. Deferred to the end of rtl/ where OCS_SV is known.
function(mxtb_rtl_ocs_small_cov)
  add_library(mxtb_rtl_ocs_small_cov STATIC)
  verilate(mxtb_rtl_ocs_small_cov SOURCES ${OCS_SV} TOP_MODULE ocs_controller PREFIX Vocs_ctl_small
    VERILATOR_ARGS ${VL_ARGS} --coverage
      -GN_PORTS=8 -GN_ELEMS=20 -GN_LINKS=4 -GEVENT_DEPTH=8
      -GUPDATE_CYCLES_RESET=4 -GSETTLE_CYCLES_RESET=50 -GPD_TIMEOUT_RESET=32
    OPT_FAST -O0 OPT_SLOW -O0 OPT_GLOBAL -O1)
  target_link_libraries(mxtb_rtl_ocs_small_cov PUBLIC mxtb_defs mxtb_rtl_coverage_on)
  set_target_properties(mxtb_rtl_ocs_small_cov PROPERTIES SYSTEM ON)
endfunction()
cmake_language(DEFER CALL mxtb_rtl_ocs_small_cov)
