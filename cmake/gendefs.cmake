# Definitions: one JSON source each, from which tools/gendefs writes the SystemVerilog package, the
# C++ header and the docs table, so the three never drift apart (docs/architecture.md, "One source
# for each concept").
#
# verilate() runs Verilator while CMake configures, so the SV packages must exist then: the
# generator is compiled and run at configure time, here, before any folder is configured, and the
# JSON files and the generator are configure dependencies (editing one re-runs configuration).
# Makefile.verilator builds the same generator with the host compiler.

set(MXTB_GEN_DIR ${CMAKE_BINARY_DIR}/gen)
file(MAKE_DIRECTORY ${MXTB_GEN_DIR}/mxtb ${CMAKE_SOURCE_DIR}/docs/generated)

set(_gendefs_src ${CMAKE_SOURCE_DIR}/tools/gendefs.cpp)
set(_gendefs_bin ${MXTB_GEN_DIR}/gendefs-configure)
set_property(DIRECTORY ${CMAKE_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_gendefs_src})
if(NOT EXISTS ${_gendefs_bin} OR ${_gendefs_src} IS_NEWER_THAN ${_gendefs_bin})
  execute_process(
    COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 -O1 ${_gendefs_src} -o ${_gendefs_bin}
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "compiling tools/gendefs.cpp failed:\n${err}")
  endif()
endif()

# mxtb_gendefs(JSON NAME): ${MXTB_GEN_DIR}/NAME_pkg.sv (or SV_PKG), ${MXTB_GEN_DIR}/mxtb/NAME.h
# and docs/generated/DOC.md, now; re-run when the JSON changes.
function(mxtb_gendefs json header_name sv_name md_name)
  set_property(DIRECTORY ${CMAKE_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${json})
  execute_process(
    COMMAND ${_gendefs_bin} ${json} --sv ${MXTB_GEN_DIR}/${sv_name} --cpp ${MXTB_GEN_DIR}/mxtb/${header_name}
            --md ${CMAKE_SOURCE_DIR}/docs/generated/${md_name}
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${json})
    message(FATAL_ERROR "gendefs rejected ${rel}:\n${err}")
  endif()
endfunction()

# The RTL's own definitions (the blocks' SV packages come from them) ...
mxtb_gendefs(${CMAKE_SOURCE_DIR}/rtl/link/link_defs.json link_defs.h link_pkg.sv link-defs.md)
mxtb_gendefs(${CMAKE_SOURCE_DIR}/rtl/ocs/ocs_regs.json ocs_regs.h ocs_reg_pkg.sv ocs-regs.md)
# ... and the protocol's: the emulator control block and the firmware mailbox.
mxtb_gendefs(${CMAKE_SOURCE_DIR}/protocol/emu_regs.json emu_regs.h emu_reg_pkg.sv emu-regs.md)
mxtb_gendefs(${CMAKE_SOURCE_DIR}/protocol/mailbox.json mailbox.h mailbox_pkg.sv mailbox.md)

# C++ users: target_link_libraries(x PRIVATE mxtb_defs), #include <mxtb/ocs_regs.h> (link_defs.h,
# emu_regs.h, mailbox.h). Headers only.
add_library(mxtb_defs INTERFACE)
target_include_directories(mxtb_defs INTERFACE ${MXTB_GEN_DIR})
