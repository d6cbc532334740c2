# A lockstep run is a function of its seed and of the host compute charged to simulated time, the
# one measured input (its figure host_decide_ns). Run 1 measures it; run 2 charges run 1's value
# and must produce the identical report, byte for byte: a run replays exactly. The ranks' re-form
# is wall time of real processes, so these runs charge the modeled constant instead (--restart none).
function(run_demo i extra)
  execute_process(COMMAND ${MXTB} demo --scenario ${SCENARIO} --no-waves --restart none --out ${OUT}.${i} ${extra}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run ${i} failed (${rc}):\n${out}\n${err}")
  endif()
  file(READ ${OUT}.${i}/report.json j)
  set(j${i} "${j}" PARENT_SCOPE)
endfunction()

run_demo(1 "")
string(JSON charged ERROR_VARIABLE no_figure GET "${j1}" failover figures host_decide_ns)
if(no_figure)
  message(FATAL_ERROR "run 1's report has no figure host_decide_ns (${no_figure}):\n${j1}")
endif()
string(REGEX REPLACE "\\.0+$" "" charged "${charged}")
if(NOT charged MATCHES "^[1-9][0-9]*$")
  message(FATAL_ERROR "run 1 charged '${charged}' ns for the host's decide: want a positive integer")
endif()
run_demo(2 "--host-decide-ns;${charged}")
if(NOT j1 STREQUAL j2)
  message(FATAL_ERROR "run 2, charged run 1's ${charged} ns, differs from run 1 on ${SCENARIO}:\n${j1}\n---\n${j2}")
endif()
message(STATUS "identical reports (host decide charged ${charged} ns)")
