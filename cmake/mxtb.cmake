# Shared build helpers: one place for warnings and test registration.

# Project code compiles with -Wall -Wextra -Werror; verilated and third-party code does not.
function(mxtb_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror>)
endfunction()

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
  if(T_ENVIRONMENT)
    set_tests_properties(${T_NAME} PROPERTIES ENVIRONMENT "${T_ENVIRONMENT}")
  endif()
  if(T_SKIP_GPU)
    set_tests_properties(${T_NAME} PROPERTIES SKIP_RETURN_CODE 77)
  endif()
endfunction()
