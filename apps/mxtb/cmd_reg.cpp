// `mxtb reg`: a board's (or the emulator's) registers read and written by name, and its address
// table written for uHAL. docs/cli.md, docs/protocol.md.
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"

#include "host/fabric/client.h"
#include "host/fabric/clock.h"
#include "protocol/board_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>

namespace mxtb::app {

namespace {

std::string format_fields(const protocol::RegRef& r, uint32_t v) {
  // Field breakdown from the generated map: controller or emulator register.
  auto fields = [&](const auto* info) {
    std::string s;
    if (!info || info->n_fields <= 1) return s;
    for (size_t i = 0; i < info->n_fields; ++i)
      s += fmt::format("{}{}={:#x}", i ? " " : "  (", info->fields[i].name, (v & info->fields[i].mask) >> info->fields[i].lsb);
    return s + ")";
  };
  if (r.addr >= protocol::kEmulatorBase && r.addr < protocol::kEmulatorBase + protocol::kEmulatorWords)
    return fields(mxtb::emu::register_at((r.addr - protocol::kEmulatorBase) * 4));
  if (r.addr < protocol::kControllerWords) return fields(mxtb::ocs::register_at(r.addr * 4));
  return "";
}

uint32_t parse_value(const std::string& text) {
  auto v = protocol::parse_u32(text);
  if (!v) throw UsageError(fmt::format("value '{}' is not a 32-bit number (decimal or 0x...)", text));
  return *v;
}

protocol::RegRef resolve_or_throw(const std::string& name) {
  std::string why;
  auto r = protocol::resolve(name, &why);
  if (!r) throw UsageError(why);
  return *r;
}

// `mxtb reg uhal`: the address table and a connections file, for uHAL (docs/protocol.md).
int write_uhal_files(const Args& args) {
  if (args.positional().size() != 1) throw UsageError("reg uhal takes no NAME (it writes the whole map)");
  if (!args.has("--out")) throw UsageError("reg uhal needs --out DIR (it writes DIR/mxtb_board.xml and DIR/connections.xml)");
  const std::string dir = args.str("--out");
  std::string uri = args.str("--target", "udp://127.0.0.1:50001");
  if (uri.rfind("udp://", 0) == 0) uri = "ipbusudp-2.0://" + uri.substr(6);
  if (uri.rfind("ipbusudp-2.0://", 0) != 0)
    throw UsageError(fmt::format("--target '{}': want udp://HOST:PORT (or uHAL's ipbusudp-2.0://HOST:PORT)", args.str("--target")));
  const std::string id = args.str("--id", "mxtb.board");
  if (id.empty()) throw UsageError("--id must not be empty");
  const std::vector<std::pair<std::string, std::string>> files{
      {dir + "/mxtb_board.xml", protocol::uhal_address_table()},
      {dir + "/connections.xml", protocol::uhal_connections(id, uri, "file://mxtb_board.xml")}};
  // Both written aside first, then renamed: a failure leaves neither file half-written or stale.
  for (const auto& [path, text] : files) {
    std::ofstream out(path + ".tmp", std::ios::trunc);
    if (!out || !(out << text) || !out.flush()) {
      for (const auto& f : files) std::remove((f.first + ".tmp").c_str());
      throw UsageError(fmt::format("cannot write {} (does --out {} exist?)", path, dir));
    }
  }
  for (const auto& [path, text] : files) {
    if (std::rename((path + ".tmp").c_str(), path.c_str()) != 0) throw UsageError(fmt::format("cannot write {}", path));
    fmt::print("wrote {}\n", path);
  }
  return 0;
}

}  // namespace

int cmd_reg(const ArgList& argv) {
  Args args(argv, ArgSpec{{"--target", "--count", "--timeout-ms", "--out", "--id"}, {}, {}, true});
  const auto& pos = args.positional();
  if (pos.empty()) throw UsageError("reg wants read, write, dump or uhal");
  if (pos[0] == "uhal") return write_uhal_files(args);
  if (args.has("--out") || args.has("--id")) throw UsageError("--out and --id are for reg uhal");
  std::string target = args.str("--target", "");
  if (target.empty()) throw UsageError("reg needs --target udp://ADDR:PORT");
  host::fabric::ClientOptions opts;
  opts.timeout = std::chrono::milliseconds(args.u64("--timeout-ms", 1000));
  opts.describe = protocol::describe;
  // Every name and value is checked before anything is sent.
  const std::string& op = pos[0];
  if (op != "read" && op != "write" && op != "dump") throw UsageError(fmt::format("reg wants read, write, dump or uhal, got '{}'", op));
  std::vector<protocol::RegRef> named;
  for (size_t i = 1; i < pos.size() && (op != "write" || i == 1); ++i) named.push_back(resolve_or_throw(pos[i]));
  if (op == "read" && pos.size() != 2) throw UsageError("reg read wants one NAME or ADDRESS");
  if (op == "write" && pos.size() != 3) throw UsageError("reg write wants NAME|ADDRESS VALUE");
  uint32_t value = op == "write" ? parse_value(pos[2]) : 0;
  if (op == "write" && !named[0].writable) throw UsageError(fmt::format("{} is read-only", named[0].name));
  uint32_t count = static_cast<uint32_t>(args.u64("--count", 1));
  if (count == 0 || count > 4096) throw UsageError(fmt::format("--count must be 1..4096, got {}", count));
  host::fabric::Client c(target, opts);
  if (op == "read") {
    auto r = named[0];
    auto v = c.read_block(r.addr, count);
    for (uint32_t i = 0; i < count; ++i) {
      auto ri = i ? *protocol::resolve(fmt::format("{:#x}", r.addr + i), nullptr) : r;
      fmt::print("{:<28} {:#010x}{}\n", i ? protocol::describe(r.addr + i) : r.name, v[i], format_fields(ri, v[i]));
    }
    return 0;
  }
  if (op == "write") {
    c.write(named[0].addr, value);
    fmt::print("{} <- {:#010x}\n", named[0].name, value);
    return 0;
  }
  {
    std::vector<protocol::RegRef> regs = named;
    if (regs.empty()) {
      for (const auto& r : mxtb::ocs::kRegisters)
        if (r.count == 1 && r.access != mxtb::ocs::Access::WO) regs.push_back(*protocol::resolve(std::string(r.name), nullptr));
      if (host::fabric::is_emulator(c))
        for (const auto& r : mxtb::emu::kRegisters)
          if (r.count == 1 && r.access != mxtb::emu::Access::WO)
            regs.push_back(*protocol::resolve("emu." + std::string(r.name), nullptr));
    }
    // One dispatch: as few packets as fit.
    std::vector<host::fabric::Pending> values;
    for (const auto& r : regs) values.push_back(c.queue_read(r.addr, r.readable ? (named.empty() ? 1 : std::min(count, r.words)) : 0));
    c.dispatch();
    for (size_t i = 0; i < regs.size(); ++i)
      for (size_t k = 0; k < values[i].values().size(); ++k) {
        uint32_t addr = regs[i].addr + static_cast<uint32_t>(k);
        uint32_t v = values[i].values()[k];
        fmt::print("{:<28} {:#010x}{}\n", k ? protocol::describe(addr) : regs[i].name, v,
                   format_fields(*protocol::resolve(fmt::format("{:#x}", addr), nullptr), v));
      }
    return 0;
  }
}
}  // namespace mxtb::app
