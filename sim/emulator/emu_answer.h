// Which accesses of the emulator's control block the emulator answers within the board's clock,
// as the board's block RAM answers (a word a clock: an event drain streams), and which stop the
// server's step for the simulation thread to answer (sim/server/board_port.h). The registers say
// it: protocol/emu_regs.json's "read" and "write" of each, generated into mxtb/emu_regs.h
// (docs/generated/emu-regs.md). This is the rule the block applies (EmuBlock::answer_within_clock)
// and testbench/tools' test_gendefs_answers.cpp enumerates; header-only on the generated map, so
// that the test needs no SystemC.
#pragma once

#include <mxtb/emu_regs.h>

#include <cstdint>

namespace mxtb::sim {

// A read at a byte offset of the block: within the clock unless its register's read stops the
// step. An offset of no register, or of a write-only one, reads 0 at once (the board top's
// transactor refuses such a read before it reaches the block: emu_reg_pkg::read_run).
constexpr bool emu_read_within_clock(uint32_t offset) {
  const emu::RegInfo* r = emu::register_at(offset);
  return !r || r->read != emu::ReadAnswer::StopsStep;
}

// A write: within the clock only where its register's write sets state the block holds.
constexpr bool emu_write_within_clock(uint32_t offset) {
  const emu::RegInfo* r = emu::register_at(offset);
  return r && r->write == emu::WriteAnswer::InClock;
}

}  // namespace mxtb::sim
