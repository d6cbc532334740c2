# The broken link endpoint models of the assertion end-to-end test must have exactly the real
# models' headers: `mxtb`'s objects, compiled against the real ones, are linked against them.
#   cmake -DREAL="dirA;dirB" -DBROKEN="dirA';dirB'" -P check_same_model_headers.cmake
foreach(real broken IN ZIP_LISTS REAL BROKEN)
  file(GLOB real_h RELATIVE ${real} ${real}/*.h)
  file(GLOB broken_h RELATIVE ${broken} ${broken}/*.h)
  if(NOT real_h OR NOT real_h STREQUAL broken_h)
    message(FATAL_ERROR "the broken model in ${broken} has other headers than the real one in ${real}:\n"
                        "  real: ${real_h}\n  broken: ${broken_h}")
  endif()
  foreach(h ${real_h})
    execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${real}/${h} ${broken}/${h} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${broken}/${h} differs from ${real}/${h}: the break changed the model's "
                          "signals, so mxtb's objects cannot be linked against it; choose a break that does not")
    endif()
  endforeach()
endforeach()
