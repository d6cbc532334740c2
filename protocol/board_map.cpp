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

}  // namespace mxtb::protocol
