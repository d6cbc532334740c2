# The demo's IPbus target reaches the emulator it starts from the flag, the scenario or the
# environment, in that order (apps/mxtb/engine_options.h): each run's emulator log names the target
# the child served with.
cmake_minimum_required(VERSION 3.25)
function(expect_target want label)
  execute_process(COMMAND ${MXTB} demo --no-waves --out ${OUT}/${label} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${label}: mxtb demo ${ARGN}: exit ${rc}\n${out}${err}")
  endif()
  file(READ ${OUT}/${label}/emulator.log log)
  if(NOT log MATCHES "IPbus target ${want} ")
    message(FATAL_ERROR "${label}: the emulator served with another target than ${want}:\n${log}")
  endif()
  message(STATUS "${label}: IPbus target ${want}")
endfunction()

file(MAKE_DIRECTORY ${OUT})
file(READ ${SCENARIO} base)
string(JSON with_cpp SET "${base}" ipbus_target "\"cpp\"")
string(JSON with_rtl SET "${base}" ipbus_target "\"rtl\"")
file(WRITE ${OUT}/scenario-cpp.json "${with_cpp}")
file(WRITE ${OUT}/scenario-rtl.json "${with_rtl}")

unset(ENV{MXTB_IPBUS_TARGET})
expect_target(rtl default --scenario ${SCENARIO})
expect_target(cpp flag --scenario ${SCENARIO} --ipbus-target cpp)
expect_target(cpp scenario --scenario ${OUT}/scenario-cpp.json)
expect_target(rtl flag-over-scenario --scenario ${OUT}/scenario-cpp.json --ipbus-target rtl)
set(ENV{MXTB_IPBUS_TARGET} cpp)
expect_target(cpp environment --scenario ${SCENARIO})
expect_target(rtl scenario-over-environment --scenario ${OUT}/scenario-rtl.json)
