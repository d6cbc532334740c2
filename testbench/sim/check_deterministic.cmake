# Runs the same emulated-server run twice and requires identical results (wall time aside).
foreach(i 1 2)
  execute_process(COMMAND ${MXTB} server --preset electro_optic --reprogram --seed 5 --json ${OUT}.${i}.json
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run ${i} failed (${rc}):\n${out}\n${err}")
  endif()
  file(READ ${OUT}.${i}.json j${i})
  string(JSON j${i} REMOVE "${j${i}}" wall_s)
endforeach()
if(NOT j1 STREQUAL j2)
  message(FATAL_ERROR "two runs with seed 5 differ:\n${j1}\n---\n${j2}")
endif()
message(STATUS "identical runs")
