# Shared build helpers: one place for warnings and test registration.

# Project code compiles with -Wall -Wextra -Werror; verilated and third-party code does not.
function(mxtb_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror>)
endfunction()

# The suite's longest tests, with their seconds on two cores (a fresh clone's .ci/run). ctest -j
# starts the costliest first, but a fresh clone has no Testing/Temporary/CTestCostData.txt: without
# these it started formal_link_pair_bmc (about 200 s) near the end, with one core idle beside it.
set(MXTB_TEST_COSTS
  formal_link_pair_bmc=260 coverage_ipbus=80 formal_board_bus_small=76 formal_board_bus_board=72
  formal_link_pair_live=60 formal_ipbus_small=60 rtl_pnr_ice40_ipbus=55 formal_link_train_default=51
  formal_ocs_ctl_small=53 bench_mutate_reviewer_sample=47 bench_reconfig=46 formal_catches_broken_rtl=44
  formal_link_rx_small=43 integration_rack_commit=40 rtl_synth_yosys_ocs=40 bench_mutate_sample=40
  integration_bridge=37 alloc.unit=34 sim_server_engines=33 integration_bridge_cpp=33
  fuzz_ipbus_target_1m=32 integration_regress_slurm=32 integration_regress_rack_seed_12=45
  integration_rack_failover_job=40 integration_regress_rack_seed_4036=40)

# mxtb_test(NAME n COMMAND cmd... LABELS l... [TIMEOUT s] [SKIP_GPU] [ENVIRONMENT VAR=value...])
# Labels follow docs/testing.md: unit, rtl, sim, integration, gpu, bench.
# SKIP_GPU: the test exits 77 when no GPU is present; ctest reports it skipped.
function(mxtb_test)
  cmake_parse_arguments(T "SKIP_GPU" "NAME;TIMEOUT;WORKING_DIRECTORY" "COMMAND;LABELS;ENVIRONMENT" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  if(NOT T_WORKING_DIRECTORY)
    set(T_WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  endif()
  add_test(NAME ${T_NAME} COMMAND ${T_COMMAND} WORKING_DIRECTORY ${T_WORKING_DIRECTORY})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
  foreach(cost ${MXTB_TEST_COSTS})
    if(cost MATCHES "^${T_NAME}=([0-9]+)$")
      set_tests_properties(${T_NAME} PROPERTIES COST ${CMAKE_MATCH_1})
    endif()
  endforeach()
  if(T_ENVIRONMENT)
    set_tests_properties(${T_NAME} PROPERTIES ENVIRONMENT "${T_ENVIRONMENT}")
  endif()
  if(T_SKIP_GPU)
    set_tests_properties(${T_NAME} PROPERTIES SKIP_RETURN_CODE 77)
  endif()
endfunction()
