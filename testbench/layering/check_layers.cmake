# The layering test: every #include "folder/..." in a layer's sources names a folder the layer may
# use, no layer includes a header it must not (SystemC in host/, sockets in protocol/, ...), and no
# library target links one of a layer it must not (cmake/layers.cmake has the rule).
#
#   cmake -DROOT=<tree> -DLINKS=<build>/layer-links.txt -P testbench/layering/check_layers.cmake
#
# ROOT is the source tree to scan (a fixture tree in the test that shows a violation is caught);
# LINKS, when given, is what mxtb_write_layer_links() wrote at configure time. One line per
# violation, naming the file and line (or the target), then a non-zero exit.
cmake_minimum_required(VERSION 3.25)  # script mode: IN_LIST and the other current policies
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/layers.cmake)

if(NOT ROOT OR NOT IS_DIRECTORY ${ROOT})
  message(FATAL_ERROR "give -DROOT=<source tree> (got '${ROOT}')")
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)
set(problems "")
foreach(layer ${MXTB_LAYERS})
  if(NOT IS_DIRECTORY ${ROOT}/${layer})
    continue()
  endif()
  file(GLOB_RECURSE sources RELATIVE ${ROOT} ${ROOT}/${layer}/*.h ${ROOT}/${layer}/*.hpp ${ROOT}/${layer}/*.cpp
       ${ROOT}/${layer}/*.cu ${ROOT}/${layer}/*.cuh)
  foreach(f ${sources})
    file(STRINGS ${ROOT}/${f} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    foreach(line ${includes})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]*)[>\"].*" "\\1" header "${line}")
      # A project header: its first folder must be one the layer may use.
      set(target_layer "")
      if(header MATCHES "^([a-z_]+)/")
        set(target_layer ${CMAKE_MATCH_1})
      endif()
      if(target_layer AND IS_DIRECTORY ${ROOT}/${target_layer} AND
         ("${target_layer}" IN_LIST MXTB_LAYERS OR target_layer STREQUAL "testbench") AND
         NOT "${target_layer}" IN_LIST MXTB_LAYER_${layer})
        list(JOIN MXTB_LAYER_${layer} ", " may)
        string(APPEND problems "${f}: includes ${header}: ${layer}/ must not use ${target_layer}/ (${layer}/ may use: ${may})\n")
      endif()
      foreach(bad ${MXTB_LAYER_FORBIDDEN_${layer}})
        string(FIND "${header}" "${bad}" at)
        if(at EQUAL 0)
          string(APPEND problems "${f}: includes <${header}>, which ${layer}/ must not use\n")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()

if(LINKS)
  if(NOT EXISTS ${LINKS})
    message(FATAL_ERROR "${LINKS}: no such file (configure the build first)")
  endif()
  file(STRINGS ${LINKS} entries)
  set(known "")
  foreach(e ${entries})
    if(e MATCHES "^target ([^ ]+) ([^ ]+)$")
      set(layer_of_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
      list(APPEND known ${CMAKE_MATCH_1})
    endif()
  endforeach()
  foreach(e ${entries})
    if(NOT e MATCHES "^link ([^ ]+) ([^ ]+)$")
      continue()
    endif()
    set(t ${CMAKE_MATCH_1})
    set(dep ${CMAKE_MATCH_2})
    set(layer ${layer_of_${t}})
    if(NOT "${layer}" IN_LIST MXTB_LAYERS)
      continue()  # testbench/, rtl/ and the top level are not layered
    endif()
    if("${dep}" IN_LIST known)
      set(dep_layer ${layer_of_${dep}})
      if("${dep_layer}" IN_LIST MXTB_LAYERS AND NOT "${dep_layer}" IN_LIST MXTB_LAYER_${layer})
        string(APPEND problems "target ${t} (${layer}/) links ${dep} (${dep_layer}/): ${layer}/ must not use ${dep_layer}/\n")
      endif()
      if("${dep_layer}" STREQUAL "rtl" AND NOT "rtl" IN_LIST MXTB_LAYER_${layer})
        string(APPEND problems "target ${t} (${layer}/) links the verilated model ${dep}\n")
      endif()
    endif()
    if("${dep}" IN_LIST MXTB_LAYER_FORBIDDEN_LINKS_${layer})
      string(APPEND problems "target ${t} (${layer}/) links ${dep}, which ${layer}/ must not use\n")
    endif()
  endforeach()
endif()

if(problems)
  # One unwrapped line per violation, then the failure.
  message(NOTICE "${problems}")
  message(FATAL_ERROR "layering violations above (the rule: cmake/layers.cmake, docs/architecture.md)")
endif()
message(STATUS "layering holds in ${ROOT}")
