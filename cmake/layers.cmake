# The layering rule (docs/architecture.md, "Layers"): which top-level folder may use which, and
# inside sim/, which of its folders may use which.
#
#   protocol <- firmware <- sim          (the board side)
#   protocol <- host -> cuda             (the host side; cuda/ is the paging engine)
#   apps (the mxtb program) -> sim, host (the one place that links both)
#
# MXTB_LAYER_<folder>: the folders whose headers and libraries code in <folder> may use.
# MXTB_LAYER_FORBIDDEN_<folder>: header prefixes it must not include (third-party and generated
# headers are otherwise free). Used by testbench/layering/check_layers.cmake (the `layering` test)
# and by mxtb_write_layer_links() below. testbench/ may use everything.
set(MXTB_LAYERS protocol firmware sim cuda host apps tools)
set(MXTB_LAYER_protocol protocol)
set(MXTB_LAYER_firmware firmware protocol)
set(MXTB_LAYER_sim sim firmware protocol rtl)
set(MXTB_LAYER_cuda cuda)
set(MXTB_LAYER_host host protocol cuda)
set(MXTB_LAYER_apps apps host sim firmware protocol cuda rtl)
set(MXTB_LAYER_tools tools)
# Inside sim/, one folder a concern, each using only the folders below it (and, through sim/'s own
# rule above, firmware/, protocol/ and rtl/); no source sits in sim/ itself:
#   sim/common <- sim/link <- sim/mesh <- sim/server <- sim/collective <- sim/emulator <- sim/rack
# (the SystemC entry; a lane's link layer; the photonic mesh; the emulated server and its engines;
# the XPUs' programs: collectives, the tenant's job, the state restore; the board on the network;
# servers joined by fibres into a rack, the processes it runs on, its boards served as the
# emulator serves one).
set(MXTB_SUBLAYERS_sim sim/common sim/link sim/mesh sim/server sim/collective sim/emulator sim/rack)
set(MXTB_LAYER_sim/common sim/common)
set(MXTB_LAYER_sim/link sim/link sim/common)
set(MXTB_LAYER_sim/mesh sim/mesh sim/link sim/common)
set(MXTB_LAYER_sim/server sim/server sim/mesh sim/link sim/common)
set(MXTB_LAYER_sim/collective sim/collective sim/server sim/mesh sim/link sim/common)
set(MXTB_LAYER_sim/emulator sim/emulator sim/collective sim/server sim/mesh sim/link sim/common)
set(MXTB_LAYER_sim/rack sim/rack sim/emulator sim/collective sim/server sim/mesh sim/link sim/common)
# No SystemC and no sockets in the protocol layer; no OS, SystemC or sockets in the firmware; no
# SystemC or verilated models in host code (it reaches the emulator over the socket only).
set(MXTB_LAYER_FORBIDDEN_protocol systemc sysc/ tlm boost/asio sys/socket.h netinet/ verilated)
set(MXTB_LAYER_FORBIDDEN_firmware systemc sysc/ tlm boost/ sys/ unistd.h pthread.h verilated)
set(MXTB_LAYER_FORBIDDEN_host systemc sysc/ tlm verilated)
set(MXTB_LAYER_FORBIDDEN_cuda systemc sysc/ tlm verilated boost/asio)
set(MXTB_LAYER_FORBIDDEN_sim)
set(MXTB_LAYER_FORBIDDEN_apps)
set(MXTB_LAYER_FORBIDDEN_tools)
# Libraries outside the project that a layer must not link (the SystemC kernel stays in sim/).
set(MXTB_LAYER_FORBIDDEN_LINKS_protocol PkgConfig::SYSTEMC)
set(MXTB_LAYER_FORBIDDEN_LINKS_firmware PkgConfig::SYSTEMC)
set(MXTB_LAYER_FORBIDDEN_LINKS_host PkgConfig::SYSTEMC)
set(MXTB_LAYER_FORBIDDEN_LINKS_cuda PkgConfig::SYSTEMC)

# Writes every project target's layer and direct links to FILE, one line each:
#   target <name> <layer>
#   link <name> <library>
# so that the layering test can check target links as well as #include lines.
function(mxtb_write_layer_links file)
  set(lines "")
  set(dirs ${CMAKE_SOURCE_DIR})
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${subdirs})
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${dir})
    string(REGEX REPLACE "/.*" "" layer "${rel}")
    if(layer STREQUAL "")
      set(layer "top")
    endif()
    foreach(t ${targets})
      string(APPEND lines "target ${t} ${layer}\n")
      foreach(prop LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
        get_target_property(libs ${t} ${prop})
        if(libs)
          foreach(l ${libs})
            if(NOT l MATCHES "^\\$<")
              string(APPEND lines "link ${t} ${l}\n")
            endif()
          endforeach()
        endif()
      endforeach()
    endforeach()
  endwhile()
  file(WRITE ${file} "${lines}")
endfunction()
