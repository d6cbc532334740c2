// libFuzzer target: any datagram at the IPbus target. Built with clang when it is installed
// (testbench/CMakeLists.txt); the seeded random-garbage tests cover the same ground without it.
// Checks beyond "no crash": a reply is never longer than the MTU, is a whole number of words,
// and a valid request afterwards still gets its answer.
#include "protocol/ipbus/codec.h"
#include "protocol/ipbus/target.h"

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace {

struct Ram : mxtb::protocol::ipbus::BusPort {
  std::vector<uint32_t> mem = std::vector<uint32_t>(64, 0);
  mxtb::protocol::ipbus::InfoCode execute(const Access& a, std::vector<uint32_t>& out) override {
    using mxtb::protocol::ipbus::TxType;
    bool inc = a.type == TxType::Read || a.type == TxType::Write;
    if (uint64_t{a.addr} + (inc ? a.words : 1) > mem.size()) return mxtb::protocol::ipbus::InfoCode::ReadError;
    for (uint32_t i = 0; i < a.words || (i == 0 && (a.type == TxType::RmwBits || a.type == TxType::RmwSum)); ++i) {
      uint32_t& w = mem[inc ? a.addr + i : a.addr];
      switch (a.type) {
        case TxType::Read:
        case TxType::NonIncRead: out.push_back(w); break;
        case TxType::Write:
        case TxType::NonIncWrite: w = a.body[i]; break;
        case TxType::RmwBits: out.push_back(w); w = (w & a.body[0]) | a.body[1]; return mxtb::protocol::ipbus::InfoCode::Success;
        case TxType::RmwSum: out.push_back(w); w += a.body[0]; return mxtb::protocol::ipbus::InfoCode::Success;
      }
    }
    return mxtb::protocol::ipbus::InfoCode::Success;
  }
};

Ram ram;
mxtb::protocol::ipbus::Target target(ram);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mxtb::protocol::ipbus;
  auto reply = target.handle(data, size);
  if (reply && (reply->size() > kMtuBytes || reply->size() % 4 != 0)) std::abort();
  std::vector<uint32_t> probe{encode(PacketHeader{PacketType::Control, 0}),
                              encode(TxHeader{0, 1, TxType::Read, InfoCode::Request}), 3};
  auto bytes = to_bytes(probe, ByteOrder::Big);
  auto r = target.handle(bytes.data(), bytes.size());
  if (!r || r->size() != 12) std::abort();
  return 0;
}
