# Runs the same demo scenario twice and requires identical reports: the lockstep emulator, the
# failover manager and the host's own time charged to it give the same timeline for one seed.
foreach(i 1 2)
  execute_process(COMMAND ${MXTB} demo --scenario ${SCENARIO} --no-waves --out ${OUT}.${i}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run ${i} failed (${rc}):\n${out}\n${err}")
  endif()
  file(READ ${OUT}.${i}/report.json j${i})
endforeach()
if(NOT j1 STREQUAL j2)
  message(FATAL_ERROR "two runs of ${SCENARIO} differ:\n${j1}\n---\n${j2}")
endif()
message(STATUS "identical reports")
