// The uHAL address table `mxtb reg uhal` writes (protocol::uhal_address_table), read back the way
// uHAL's NodeTreeBuilder reads one: a node's address is its parent's plus its own, permissions and
// modes from uHAL's tables, a masked node has no children, ids have no '.'. Every node must be
// where `protocol::resolve` puts the same name, and every register of both maps must be there.
#include "protocol/board_map.h"

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace pt = boost::property_tree;
using namespace mxtb;

struct UhalNode {
  std::string path;  // "STATUS", "emu.TIME_NS_LO", "STATUS.busy"
  uint64_t addr = 0;
  uint32_t mask = 0xFFFFFFFFu;
  std::string permission = "rw", mode = "single";
  uint32_t size = 1;
  bool leaf = true;
};

uint64_t number(const std::string& text) {
  size_t used = 0;
  const uint64_t v = std::stoull(text, &used, 0);
  REQUIRE(used == text.size());
  return v;
}

void walk(const pt::ptree& xml, const std::string& prefix, uint64_t parent_addr, bool parent_masked, std::vector<UhalNode>& out) {
  std::set<std::string> ids;
  for (const auto& [tag, child] : xml) {
    if (tag != "node") continue;
    INFO("under '" << prefix << "'");
    REQUIRE_FALSE(parent_masked);  // uHAL: "Bit-masked nodes are not allowed to have child nodes"
    const auto& attr = child.get_child("<xmlattr>");
    UhalNode n;
    const std::string id = attr.get<std::string>("id");
    CHECK(id.find('.') == std::string::npos);
    CHECK(ids.insert(id).second);  // ids unique among siblings
    n.path = prefix.empty() ? id : prefix + "." + id;
    n.addr = parent_addr + number(attr.get<std::string>("address", "0"));
    if (auto m = attr.get_optional<std::string>("mask")) n.mask = static_cast<uint32_t>(number(*m));
    n.permission = attr.get<std::string>("permission", "rw");
    CHECK(std::set<std::string>{"r", "w", "rw"}.count(n.permission) == 1);
    n.mode = attr.get<std::string>("mode", "single");
    CHECK(std::set<std::string>{"single", "block"}.count(n.mode) == 1);
    if (n.mode == "block") n.size = static_cast<uint32_t>(number(attr.get<std::string>("size")));
    CHECK(n.addr + n.size - 1 <= 0xFFFFFFFFull);
    n.leaf = child.count("node") == 0;
    out.push_back(n);
    walk(child, n.path, n.addr, attr.count("mask") > 0, out);
  }
}

template <class Regs>
size_t count_words(const Regs& regs) {
  size_t n = 0;
  for (const auto& r : regs) n += r.count;
  return n;
}

}  // namespace

TEST_CASE("uHAL address table: every register where resolve() puts it, by uHAL's rules") {
  std::istringstream text(protocol::uhal_address_table());
  pt::ptree doc;
  REQUIRE_NOTHROW(pt::read_xml(text, doc));
  REQUIRE(doc.count("node") == 1);
  std::vector<UhalNode> nodes;
  walk(doc.get_child("node"), "", number(doc.get<std::string>("node.<xmlattr>.address", "0")), false, nodes);

  std::map<uint64_t, std::string> word_owner;  // every word some register node covers
  size_t fields = 0;
  for (const auto& n : nodes) {
    INFO(n.path);
    if (n.mask != 0xFFFFFFFFu) {  // a field: inside its register's word
      ++fields;
      const auto reg = n.path.substr(0, n.path.rfind('.'));
      const auto r = protocol::resolve(reg, nullptr);
      REQUIRE(r.has_value());
      CHECK(n.addr == r->addr);
      CHECK(n.permission == std::string(r->readable && r->writable ? "rw" : r->readable ? "r" : "w"));  // its register's
      continue;
    }
    if (!n.leaf) {
      const bool is_register = protocol::resolve(n.path, nullptr).has_value();
      if (!is_register) continue;  // a branch ("emu")
    }
    const std::string name = n.path == "ram" ? "ram[0]" : n.size > 1 ? n.path + "[0]" : n.path;
    std::string why;
    const auto r = protocol::resolve(name, &why);
    REQUIRE_MESSAGE(r.has_value(), why);
    CHECK(n.addr == r->addr);
    CHECK(n.size == r->words);  // a block is the whole window
    CHECK(n.permission == std::string(r->readable && r->writable ? "rw" : r->readable ? "r" : "w"));
    if (n.size > 1) CHECK_FALSE(protocol::resolve(fmt::format("{}[{}]", n.path, n.size), nullptr).has_value());
    for (uint64_t w = n.addr; w < n.addr + n.size; ++w) {
      auto [it, fresh] = word_owner.emplace(w, n.path);
      CHECK_MESSAGE(fresh, "word " << w << " of " << n.path << " is also " << it->second << "'s");
    }
  }
  // Nothing left out: every word of both maps and of the RAM, and every field of a register.
  CHECK(word_owner.size() == count_words(ocs::kRegisters) + count_words(emu::kRegisters) + protocol::kRamWords);
  size_t want_fields = 0;
  for (const auto& r : ocs::kRegisters) want_fields += r.count == 1 && r.n_fields > 1 ? r.n_fields : 0;
  for (const auto& r : emu::kRegisters) want_fields += r.count == 1 && r.n_fields > 1 ? r.n_fields : 0;
  CHECK(fields == want_fields);
}

TEST_CASE("uHAL address table: fields are their registers' masks; text is escaped") {
  std::istringstream text(protocol::uhal_address_table());
  pt::ptree doc;
  pt::read_xml(text, doc);
  std::vector<UhalNode> nodes;
  walk(doc.get_child("node"), "", 0, false, nodes);
  size_t checked = 0;
  for (const auto& n : nodes) {
    if (n.mask == 0xFFFFFFFFu) continue;
    const auto dot = n.path.rfind('.');
    const auto reg = n.path.substr(0, dot), field = n.path.substr(dot + 1);
    const bool emulator = reg.rfind("emu.", 0) == 0;
    const auto r = protocol::resolve(reg, nullptr);
    REQUIRE(r.has_value());
    auto find_mask = [&](const auto* info) -> uint32_t {
      for (size_t i = 0; i < info->n_fields; ++i)
        if (info->fields[i].name == field) return info->fields[i].mask;
      return 0;
    };
    const uint32_t want = emulator ? find_mask(emu::register_at((r->addr - protocol::kEmulatorBase) * 4))
                                   : find_mask(ocs::register_at(r->addr * 4));
    INFO(n.path);
    CHECK(want != 0);
    CHECK(n.mask == want);
    ++checked;
  }
  CHECK(checked > 10);
  // A description with XML's special characters survives the round trip.
  const std::string conn = protocol::uhal_connections("a&b", "ipbusudp-2.0://127.0.0.1:50001", "file://t<1>.xml");
  std::istringstream ct(conn);
  pt::ptree c;
  REQUIRE_NOTHROW(pt::read_xml(ct, c));
  CHECK(c.get<std::string>("connections.connection.<xmlattr>.id") == "a&b");
  CHECK(c.get<std::string>("connections.connection.<xmlattr>.address_table") == "file://t<1>.xml");
}
