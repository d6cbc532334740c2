#include "protocol/board_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace mxtb::protocol {

namespace {

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

template <class RegInfo, class Access>
RegRef ref_of(const RegInfo& r, const std::string& prefix, uint32_t base, uint32_t index, Access ro, Access wo) {
  RegRef out;
  out.name = prefix + std::string(r.name) + (r.count > 1 ? fmt::format("[{}]", index) : "");
  out.addr = base + r.offset / 4 + index;
  out.words = r.count - index;
  out.readable = r.access != wo;
  out.writable = r.access != ro;
  out.doc = std::string(r.doc);
  return out;
}

std::string xml_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

// One map's registers as uHAL nodes, word addresses relative to the map's node. Permissions are
// the bus's access rules (a read of a write-only register, a write of a read-only one, is refused);
// uHAL has no words for write-1-to-clear and reading-clears, so the description says them.
template <class Regs>
void uhal_registers(std::string& o, const Regs& regs, uint32_t base, const std::string& indent) {
  for (const auto& r : regs) {
    const std::string_view access = to_string(r.access);
    const char* permission = access == "ro" ? "r" : access == "wo" ? "w" : "rw";
    std::string doc(r.doc);
    if (access == "w1c") doc = "Write 1 to clear. " + doc;
    if (access == "rc") doc = "Reading clears. " + doc;
    o += fmt::format("{}<node id=\"{}\" address=\"{:#010x}\" permission=\"{}\"", indent, r.name, base + r.offset / 4, permission);
    if (r.count > 1) o += fmt::format(" mode=\"block\" size=\"{}\"", r.count);
    o += fmt::format(" description=\"{}\"", xml_escape(doc));
    // A block's words share a layout uHAL cannot attach to it (a masked node's parent is one
    // register): the description names the fields instead.
    if (r.count > 1 || r.n_fields <= 1) {
      o += "/>\n";
      continue;
    }
    o += ">\n";
    for (size_t i = 0; i < r.n_fields; ++i)
      o += fmt::format("{}  <node id=\"{}\" mask=\"{:#010x}\" permission=\"{}\"/>\n", indent, r.fields[i].name,
                       r.fields[i].mask, permission);  // uHAL's default would be rw
    o += indent + "</node>\n";
  }
}

}  // namespace

std::optional<uint32_t> parse_u32(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &used, 0);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != text.size() || v > 0xFFFFFFFFull) return std::nullopt;
  return static_cast<uint32_t>(v);
}

std::optional<RegRef> resolve(const std::string& text, std::string* why) {
  auto fail = [&](std::string w) -> std::optional<RegRef> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  if (text.empty()) return fail("empty register name");
  if (std::isdigit(static_cast<unsigned char>(text[0]))) {
    auto v = parse_u32(text);
    if (!v) return fail(fmt::format("'{}' is not a 32-bit address", text));
    return RegRef{describe(*v), *v, 1, true, true, ""};
  }
  std::string name = upper(text);
  uint32_t index = 0;
  bool indexed = false;
  if (auto lb = name.find('['); lb != std::string::npos) {
    if (name.back() != ']') return fail(fmt::format("'{}': index must be written NAME[i]", text));
    std::string idx = name.substr(lb + 1, name.size() - lb - 2);
    if (idx.empty() || idx.find_first_not_of("0123456789") != std::string::npos || idx.size() > 9)
      return fail(fmt::format("'{}': index '{}' is not a number", text, idx));
    index = static_cast<uint32_t>(std::stoul(idx));
    indexed = true;
    name = name.substr(0, lb);
  }
  auto check_index = [&](uint32_t count, const std::string& what) -> bool {
    if (indexed && count == 1) return fail(fmt::format("'{}': {} is one register, not a window", text, what)), false;
    if (index >= count) return fail(fmt::format("'{}': index {} is outside {} ({} words)", text, index, what, count)), false;
    return true;
  };
  if (name == "RAM") {
    if (!check_index(kRamWords, "ram")) return std::nullopt;
    return RegRef{fmt::format("ram[{}]", index), kRamBase + index, kRamWords - index, true, true, "board scratch RAM"};
  }
  if (name.rfind("EMU.", 0) == 0) {
    std::string n = name.substr(4);
    for (const auto& r : mxtb::emu::kRegisters)
      if (r.name == n) {
        if (!check_index(r.count, "emu." + n)) return std::nullopt;
        return ref_of(r, "emu.", kEmulatorBase, index, mxtb::emu::Access::RO, mxtb::emu::Access::WO);
      }
    return fail(fmt::format("'{}': no emulator register {} (see docs/generated/emu-regs.md)", text, n));
  }
  for (const auto& r : mxtb::ocs::kRegisters)
    if (r.name == name) {
      if (!check_index(r.count, name)) return std::nullopt;
      return ref_of(r, "", kControllerBase, index, mxtb::ocs::Access::RO, mxtb::ocs::Access::WO);
    }
  return fail(fmt::format("'{}': no controller register of that name (see docs/generated/ocs-regs.md; emulator registers "
                          "are emu.NAME, the scratch RAM ram[i])",
                          text));
}

std::string describe(uint32_t addr) {
  if (addr >= kRamBase && addr < kRamBase + kRamWords) return fmt::format("ram[{}]", addr - kRamBase);
  if (addr >= kEmulatorBase && addr < kEmulatorBase + kEmulatorWords) {
    if (const auto* r = mxtb::emu::register_at((addr - kEmulatorBase) * 4))
      return r->count > 1 ? fmt::format("emu.{}[{}]", r->name, (addr - kEmulatorBase) - r->offset / 4)
                          : fmt::format("emu.{}", r->name);
  }
  if (addr < kControllerBase + kControllerWords) {
    if (const auto* r = mxtb::ocs::register_at(addr * 4))
      return r->count > 1 ? fmt::format("{}[{}] ({:#010x})", r->name, addr - r->offset / 4, addr)
                          : fmt::format("{} ({:#010x})", r->name, addr);
  }
  return fmt::format("{:#010x}", addr);
}

std::string uhal_address_table() {
  std::string o =
      "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n"
      "<!-- The Morphlux board's IPbus address map for uHAL, written by `mxtb reg uhal` from\n"
      "     rtl/ocs/ocs_regs.json, protocol/emu_regs.json and protocol/board_map.h. docs/protocol.md. -->\n"
      "<node id=\"TOP\">\n";
  uhal_registers(o, mxtb::ocs::kRegisters, kControllerBase, "  ");
  o += fmt::format(
      "  <node id=\"emu\" address=\"{:#010x}\" description=\"The emulator control block: the emulator only (a board answers a "
      "bus error)\">\n",
      kEmulatorBase);
  uhal_registers(o, mxtb::emu::kRegisters, 0, "    ");
  o += "  </node>\n";
  o += fmt::format("  <node id=\"ram\" address=\"{:#010x}\" permission=\"rw\" mode=\"block\" size=\"{}\" "
                   "description=\"The board's scratch RAM (a block RAM): read, write and RMW\"/>\n",
                   kRamBase, kRamWords);
  return o + "</node>\n";
}

std::string uhal_connections(const std::string& id, const std::string& uri, const std::string& table) {
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<connections>\n  <connection id=\"{}\" uri=\"{}\" address_table=\"{}\"/>\n</connections>\n",
      xml_escape(id), xml_escape(uri), xml_escape(table));
}

}  // namespace mxtb::protocol
