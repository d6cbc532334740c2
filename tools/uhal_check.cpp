// mxtb_uhal_check: CERN's uHAL, the IPbus software boards of this kind are driven with, against a
// Morphlux board or `mxtb sim`, through the address table and connections file `mxtb reg uhal`
// writes. It does what uHAL users do: named reads and masked fields, block transfers of the
// scratch RAM over several packets, RMW bits and sum, non-incrementing transfers, bus errors that
// uHAL decodes (and the link carrying on after them), thousands of small dispatches.
//
// It writes only the scratch RAM, the controller's SCRATCH window and one STAGED_DAC write that
// the controller refuses (a code over DAC_BITS: SLVERR, nothing changes), so a board may run it.
// The emulator block is checked where it answers (a board answers a bus error there).
//
// Built only when CMake is given -DMXTB_UHAL_PREFIX (uHAL is not in Debian); tools/uhal_check.sh
// runs it against `mxtb sim` through both IPbus targets. docs/protocol.md, "uHAL".
#include "mxtb/emu_regs.h"
#include "mxtb/ocs_regs.h"

#include "uhal/uhal.hpp"

#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s  %s\n", ok ? "PASS" : "FAIL", what.c_str());
  if (!ok) ++failures;
}

std::string hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

template <class V>
std::vector<uint32_t> values(const V& v) {
  return std::vector<uint32_t>(v.begin(), v.end());
}

// The message uHAL raised for a dispatch, or "" when it raised none.
std::string error_of(uhal::HwInterface& hw, const std::function<void()>& queue) {
  try {
    queue();
    hw.dispatch();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

int run(char** argv) {
  uhal::ConnectionManager manager(argv[1]);
  uhal::HwInterface hw = manager.getDevice(argv[2]);
  uhal::ClientInterface& client = hw.getClient();
  std::printf("uHAL %d.%d.%d, device %s at %s\n", UHAL_VERSION_MAJOR, UHAL_VERSION_MINOR, UHAL_VERSION_PATCH, argv[2],
              client.uri().c_str());

  namespace ocs = mxtb::ocs::reg;
  uhal::ValWord<uint32_t> id = hw.getNode("ID").read();
  uhal::ValWord<uint32_t> n_ports = hw.getNode("PARAMS.n_ports").read();
  uhal::ValWord<uint32_t> params = hw.getNode("PARAMS").read();
  hw.dispatch();
  check(id.value() == ocs::id::kReset, "ID reads " + hex(id.value()) + ", the controller's " + hex(ocs::id::kReset));
  check(n_ports.value() == (params.value() & ocs::params::kNPortsMask) >> ocs::params::kNPortsShift,
        "PARAMS.n_ports, a masked node, is its field of PARAMS (" + std::to_string(n_ports.value()) + ")");

  // The scratch RAM: a write and a read of all of it, which uHAL splits into several packets.
  // Where the RAM is and how big, as the table says.
  const uint32_t ram_base = hw.getNode("ram").getAddress(), ram_words = hw.getNode("ram").getSize();
  check(ram_words >= 1024, "the table's ram: " + std::to_string(ram_words) + " words at " + hex(ram_base));
  std::vector<uint32_t> pattern(ram_words);
  for (uint32_t i = 0; i < pattern.size(); ++i) pattern[i] = (i * 2654435761u) ^ 0x5a5a0000u;
  hw.getNode("ram").writeBlock(pattern);
  hw.dispatch();
  uhal::ValVector<uint32_t> ram = hw.getNode("ram").readBlock(ram_words);
  uhal::ValVector<uint32_t> ten = hw.getNode("ram").readBlockOffset(10, 1000);
  hw.dispatch();
  check(values(ram) == pattern, "ram: " + std::to_string(pattern.size()) + "-word writeBlock and readBlock agree");
  check(values(ten) == std::vector<uint32_t>(pattern.begin() + 1000, pattern.begin() + 1010), "ram: readBlockOffset(10, 1000)");

  const uint32_t a = ram_base + 17;
  client.write(a, 0xF0F0F0F0u);
  uhal::ValWord<uint32_t> bits_old = client.rmw_bits(a, 0x0000FFFFu, 0x12340000u);
  uhal::ValWord<uint32_t> bits_new = client.read(a);
  uhal::ValWord<uint32_t> sum_old = client.rmw_sum(a, 0x10);
  uhal::ValWord<uint32_t> sum_new = client.read(a);
  hw.dispatch();
  check(bits_old.value() == 0xF0F0F0F0u && bits_new.value() == 0x1234F0F0u,
        "rmw_bits returns the old word " + hex(bits_old.value()) + ", leaves " + hex(bits_new.value()));
  check(sum_old.value() == 0x1234F0F0u && sum_new.value() == 0x1234F100u,
        "rmw_sum returns the old word " + hex(sum_old.value()) + ", leaves " + hex(sum_new.value()));

  client.writeBlock(a + 1, std::vector<uint32_t>{1, 2, 3}, uhal::defs::NON_INCREMENTAL);
  uhal::ValVector<uint32_t> port = client.readBlock(a + 1, 4, uhal::defs::NON_INCREMENTAL);
  uhal::ValWord<uint32_t> beside = client.read(a + 2);
  hw.dispatch();
  check(values(port) == std::vector<uint32_t>(4, 3), "non-incrementing: the last of three writes stays, read 4 times");
  check(beside.value() == pattern[19], "non-incrementing: the next word is untouched");

  hw.getNode("SCRATCH").writeBlock(std::vector<uint32_t>{0xCAFEF00Du, 0x0BADBEEFu});
  uhal::ValVector<uint32_t> scratch = hw.getNode("SCRATCH").readBlock(2);
  hw.dispatch();
  check(values(scratch) == std::vector<uint32_t>{0xCAFEF00Du, 0x0BADBEEFu}, "SCRATCH[0..1], the controller over AXI4-Lite");

  // Bus errors: uHAL names the response code, and the next dispatch works.
  const std::string hole = error_of(hw, [&] { client.read(0x8000); });
  check(hole.find("bus error on read") != std::string::npos, "a read of a hole (0x8000): uHAL says \"" + hole.substr(0, 60) + "...\"");
  uhal::ValVector<uint32_t> dac_before = hw.getNode("STAGED_DAC").readBlock(1);
  hw.dispatch();
  const std::string dac = error_of(hw, [&] { hw.getNode("STAGED_DAC").writeBlock(std::vector<uint32_t>{0xFFFFFFFFu}); });
  uhal::ValVector<uint32_t> dac_after = hw.getNode("STAGED_DAC").readBlock(1);
  uhal::ValWord<uint32_t> after_errors = client.read(a);
  hw.dispatch();
  check(dac.find("bus error on write") != std::string::npos && dac.find("STAGED_DAC") != std::string::npos,
        "STAGED_DAC[0] = 0xFFFFFFFF (over DAC_BITS): uHAL names the node and the write's bus error");
  check(dac_after[0] == dac_before[0], "the refused write changed nothing");
  check(after_errors.value() == 0x1234F100u, "the link carries on after both errors");

  // The emulator block, where there is one.
  uhal::ValWord<uint32_t> emu_id(0);
  if (error_of(hw, [&] { emu_id = hw.getNode("emu.ID").read(); }).empty())
    check(emu_id.value() == mxtb::emu::reg::id::kReset, "emu.ID reads the emulator's " + hex(mxtb::emu::reg::id::kReset));
  else
    std::printf("      emu.ID answers a bus error: a board, not the emulator\n");

  constexpr int kDispatches = 2000;
  int right = 0;
  for (int i = 0; i < kDispatches; ++i) {
    client.write(a + 100, static_cast<uint32_t>(i));
    uhal::ValWord<uint32_t> r = client.read(a + 100);
    hw.dispatch();
    right += r.value() == static_cast<uint32_t>(i);
  }
  check(right == kDispatches, std::to_string(right) + " of " + std::to_string(kDispatches) + " dispatches of a write and a read right");

  // What uHAL sent, as the emulator counted it (docs/protocol.md: uHAL's UDP client sends no
  // status request and numbers every packet 0, so nothing is resent).
  uhal::ValVector<uint32_t> stats(0);
  if (error_of(hw, [&] { stats = hw.getNode("emu.IPBUS_STATS").readBlock(5); }).empty())
    std::printf("      the emulator's IPBUS_STATS: %u datagrams, %u control packets, %u status requests, %u resends, %u transactions\n",
                stats[0], stats[1], stats[2], stats[3], stats[4]);
  std::printf("%s\n", failures ? "uHAL check: FAILED" : "uHAL check: all passed");
  return failures ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: mxtb_uhal_check CONNECTIONS_URI DEVICE_ID  (e.g. file://DIR/connections.xml mxtb.board,\n"
                         "       from `mxtb reg uhal --out DIR --target udp://HOST:PORT`)\n");
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each line as it comes, to a pipe too
  uhal::setLogLevelTo(uhal::Fatal());        // the failures it expects are checked here, not logged
  try {
    return run(argv);
  } catch (const std::exception& e) {  // a connections file uHAL refuses, a timeout, an unexpected error
    std::printf("uHAL check: FAILED, uHAL raised: %s\n", e.what());
    return 1;
  }
}
