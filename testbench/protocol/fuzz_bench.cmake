# The long fuzz campaign on the IPbus target: FUZZ runs RUNS inputs from SEED; the run must end
# without a crash, and its figures (inputs, seconds, inputs per second, coverage) are printed and
# written to JSON. Usage: cmake -DFUZZ=bin -DRUNS=n -DSEED=s -DJSON=file -DARTIFACTS=dir/ -P fuzz_bench.cmake
foreach(v FUZZ RUNS SEED JSON ARTIFACTS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "fuzz_bench.cmake: -D${v}=... is required")
  endif()
endforeach()
string(TIMESTAMP t0 "%s")
execute_process(COMMAND ${FUZZ} -runs=${RUNS} -seed=${SEED} -max_len=1600 -print_final_stats=1
                        -artifact_prefix=${ARTIFACTS}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(TIMESTAMP t1 "%s")
set(log "${out}${err}")
if(NOT rc EQUAL 0)
  string(LENGTH "${log}" n)
  math(EXPR from "${n} - 4000")
  if(from LESS 0)
    set(from 0)
  endif()
  string(SUBSTRING "${log}" ${from} -1 tail)
  message(FATAL_ERROR "fuzz_ipbus_target: exit ${rc} (a crash leaves its input in ${ARTIFACTS}):\n${tail}")
endif()
foreach(stat number_of_executed_units average_exec_per_sec new_units_added peak_rss_mb)
  if(NOT log MATCHES "stat::${stat}: *([0-9]+)")
    message(FATAL_ERROR "fuzz_ipbus_target printed no stat::${stat}")
  endif()
  set(${stat} ${CMAKE_MATCH_1})
endforeach()
set(cov 0)
if(log MATCHES ".*cov: ([0-9]+)")
  set(cov ${CMAKE_MATCH_1})
endif()
math(EXPR secs "${t1} - ${t0}")
if(number_of_executed_units LESS RUNS)
  message(FATAL_ERROR "fuzz_ipbus_target ran ${number_of_executed_units} inputs, fewer than ${RUNS}")
endif()
message("fuzz_ipbus_target: ${number_of_executed_units} inputs from seed ${SEED}, no crash, ${secs} s wall, "
        "${average_exec_per_sec} inputs/s, coverage ${cov} edges, ${new_units_added} corpus units, peak ${peak_rss_mb} MB")
file(WRITE ${JSON} "{\"bench\": \"fuzz_ipbus_target\", \"inputs\": ${number_of_executed_units}, \"seed\": ${SEED}, "
                   "\"crashes\": 0, \"wall_s\": ${secs}, \"inputs_per_s\": ${average_exec_per_sec}, "
                   "\"coverage_edges\": ${cov}, \"corpus_units\": ${new_units_added}, \"peak_rss_mb\": ${peak_rss_mb}}\n")
