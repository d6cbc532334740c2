// The board's IPbus address map (32-bit word addresses), the same on the emulator and on the
// FPGA board: the controller's AXI4-Lite registers, the emulator-only control block, and the
// board's scratch RAM. Register names come from the generated maps (rtl/ocs/ocs_regs.json,
// protocol/emu_regs.json), so host code, the emulator and `mxtb reg` share one source.
// docs/protocol.md.
#pragma once

#include <mxtb/emu_regs.h>
#include <mxtb/ocs_regs.h>

#include <cstdint>
#include <optional>
#include <string>

namespace mxtb::protocol {

inline constexpr uint32_t kControllerBase = 0x0000'0000;  // + controller byte offset / 4
inline constexpr uint32_t kControllerWords = 1u << (mxtb::ocs::kAddrWidth - 2);
inline constexpr uint32_t kEmulatorBase = 0x0001'0000;    // + emulator block byte offset / 4
inline constexpr uint32_t kEmulatorWords = 1u << (mxtb::emu::kAddrWidth - 2);
inline constexpr uint32_t kRamBase = 0x0002'0000;         // board scratch RAM, read/write/RMW
inline constexpr uint32_t kRamWords = 4096;

// Word address of a controller register (byte offset from mxtb/ocs_regs.h), word `index` of a window.
constexpr uint32_t controller(uint32_t byte_offset, uint32_t index = 0) { return kControllerBase + byte_offset / 4 + index; }
// Word address of an emulator control register (byte offset from mxtb/emu_regs.h).
constexpr uint32_t emulator(uint32_t byte_offset, uint32_t index = 0) { return kEmulatorBase + byte_offset / 4 + index; }

// A named place in the map: "STATUS", "LINK_STATUS[3]", "emu.TIME_NS_LO", "ram[12]", or a
// number ("0x20000"). Names are case-insensitive.
struct RegRef {
  std::string name;       // canonical: "LINK_STATUS[3]", "emu.ADVANCE_NS", "ram[12]"
  uint32_t addr = 0;      // word address
  uint32_t words = 1;     // words from addr to the end of its window
  bool readable = true, writable = true;
  std::string doc;
};
// nullopt and why when the name is unknown or its index is outside its window.
std::optional<RegRef> resolve(const std::string& name, std::string* why);
// "123", "0x7b" (or any base prefix std::stoull knows) -> value; nullopt unless the whole text is
// a number that fits 32 bits.
std::optional<uint32_t> parse_u32(const std::string& text);

// The name of a word address ("LINK_STATUS[3]", "ram[12]", "emu.TIME_NS_LO", or hex).
std::string describe(uint32_t addr);

// The map as a uHAL address table (XML; uHAL's node tree: a node's address is its parent's plus
// its own, a field is a masked child of its register): controller registers at the top as
// "STATUS", emulator registers under "emu", windows and the scratch RAM as blocks
// ("LINK_STATUS", size 32; "ram", size 4096). The same names `resolve` takes, less the index.
std::string uhal_address_table();
// A uHAL connections file: device `id` at `uri` ("ipbusudp-2.0://127.0.0.1:50001") with the
// address table at `table` ("file://mxtb_board.xml"; relative to the connections file).
std::string uhal_connections(const std::string& id, const std::string& uri, const std::string& table);

}  // namespace mxtb::protocol
