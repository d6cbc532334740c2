# The layering test must fail on a tree that breaks the rule, naming every violation:
cmake_minimum_required(VERSION 3.25)
# testbench/layering/violations/ holds one of each kind (never compiled).
set(fixture ${CMAKE_CURRENT_LIST_DIR}/violations)
execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${fixture} -DLINKS=${fixture}/layer-links.txt
                        -P ${CMAKE_CURRENT_LIST_DIR}/check_layers.cmake
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "check_layers.cmake passed a tree with violations:\n${out}${err}")
endif()
foreach(expected
    "host/reaches_into_sim.cpp: includes sim/server/server_sim.h: host/ must not use sim/"
    "host/reaches_into_sim.cpp: includes <systemc>, which host/ must not use"
    "protocol/opens_a_socket.h: includes <boost/asio.hpp>, which protocol/ must not use"
    "firmware/uses_the_host.h: includes host/fabric/board.h: firmware/ must not use host/"
    "target mxtb_fabric (host/) links mxtb_sim (sim/): host/ must not use sim/"
    "target mxtb_protocol (protocol/) links PkgConfig::SYSTEMC, which protocol/ must not use"
    "target mxtb_fabric (host/) links the verilated model mxtb_rtl_ocs"
    "sim/link/reaches_up.h: includes sim/server/server_sim.h: sim/link/ must not use sim/server/"
    "sim/outside_its_folders.h: sim/ code lives in one of its folders")
  string(FIND "${err}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the layering check missed: ${expected}\nit said:\n${err}")
  endif()
endforeach()
foreach(allowed "protocol/opens_a_socket.h: includes protocol/fabric_map.h"
                "sim/server/server_sim.h: includes sim/link/reaches_up.h" "target mxtb_sim (sim/) links mxtb_protocol"
                "target mxtb_fabric (host/) links mxtb_protocol")
  string(FIND "${err}" "${allowed}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "the layering check refused what the rule allows: ${allowed}\n${err}")
  endif()
endforeach()
message(STATUS "every violation named, nothing allowed refused")
