# Coverage (docs/coverage.md), included by rtl/CMakeLists.txt once VL_ARGS and VL_OPTS are set and
# before rtl/models.cmake declares the models.
#
# -DMXTB_COVERAGE=ON, in a build directory of its own (`mxtb cover` uses build-cover/): every
# verilated model gets Verilator's --coverage (line, toggle and the RTL's COVER points), and every
# program that owns models writes their counters under $MXTB_COVERAGE_DIR (rtl/cov/coverage_dump.h).
# The ordinary build keeps its fast models; it only adds the two coverage variants of rtl/models.cmake
# (the transactor's for the differential harness, the shrunk controller's for the coverage smoke
# test), with the arguments and options below.
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
# Always writes: for the coverage variants (rtl/models.cmake).
mxtb_coverage_dump_library(mxtb_rtl_coverage_on ON)

# The coverage variants' arguments, in every build (in a coverage build VL_ARGS has --coverage too),
# and their options: -O2 for a model that runs long (the differential harness runs 10^5 datagrams
# through the transactor's: 42 s against 55 s at -O1, for 9 s more of build); -O0 for one that
# runs for seconds, and builds fastest so (the shrunk controller's).
set(VL_ARGS_COVERAGE ${VL_ARGS} --coverage)
set(VL_OPTS_COV_LONG OPT_FAST -O2 OPT_SLOW -O0 OPT_GLOBAL -O2)
set(VL_OPTS_COV_SHORT OPT_FAST -O0 OPT_SLOW -O0 OPT_GLOBAL -O1)
