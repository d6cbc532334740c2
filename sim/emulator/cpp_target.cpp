// The C++ target (`mxtb sim --ipbus-target cpp`, the reference): protocol/ipbus/target.h runs on
// the socket's threads (ipbus_server.h: sequence, replies, status, resend, bad input, the board
// RAM), and each access that reaches the simulation comes here as a job for the simulation thread:
// the controller's registers (AXI4-Lite transactions on the top's firmware port, shared with the
// firmware, at their cycle cost) or the emulator's block (EmuBlock, no simulated time but what its
// writes run). Every word of an access must be a register that allows it, or nothing happens: the
// rules the board top's transactor applies in RTL. The target's counters are the socket's.
#include "sim/emulator/ipbus_target.h"

#include "protocol/board_map.h"

#include <mxtb/emu_regs.h>
#include <mxtb/ocs_regs.h>

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

namespace mxtb::sim {

namespace {

namespace ipbus = protocol::ipbus;
using ipbus::InfoCode;
using ipbus::TxType;
using Access = ipbus::BusPort::Access;

bool is_write(TxType t) { return t == TxType::Write || t == TxType::NonIncWrite; }
bool incrementing(TxType t) { return t == TxType::Read || t == TxType::Write; }
bool is_rmw(TxType t) { return t == TxType::RmwBits || t == TxType::RmwSum; }
InfoCode error_for(TxType t) { return is_write(t) ? InfoCode::WriteError : InfoCode::ReadError; }

// Whether every word the access touches is a register (`find`: its info at a byte address, or
// null) whose access allows it.
template <class Find>
bool access_allowed(const Access& a, uint32_t first_word, Find find) {
  const bool rmw = is_rmw(a.type);
  for (uint32_t i = 0; i < (incrementing(a.type) ? a.words : std::min<uint32_t>(a.words, 1)); ++i) {
    const auto* r = find((first_word + i) * 4);
    if (!r) return false;
    if ((is_write(a.type) || rmw) && r->access == decltype(r->access)::RO) return false;
    if ((!is_write(a.type) || rmw) && r->access == decltype(r->access)::WO) return false;
  }
  return true;
}

class CppTarget : public RequestTarget {
 public:
  CppTarget(ServerSim& sim, ServerClock& clock, EmuBlock& block, SimThread& thread, StallInjection inject)
      : RequestTarget(thread, inject), sim_(sim), clock_(clock), block_(block) {}
  IpbusServer::Mode socket_mode() const override { return IpbusServer::Mode::Target; }
  const char* describe() const override { return "cpp (protocol/ipbus/target.cpp)"; }
  bool serve_one(std::chrono::microseconds timeout) override {
    auto job = server_->next_job(timeout);
    if (job) handle(*job);
    return job.has_value();
  }
  ipbus::TargetStats stats() const override { return server_->stats(); }

 private:
  void handle(IpbusServer::Job& job);
  InfoCode controller_access(const Access& a, std::vector<uint32_t>& out);
  AxilResult controller_transaction(bool write, uint32_t word, uint32_t data);
  InfoCode emulator_access(const Access& a, std::vector<uint32_t>& out);

  ServerSim& sim_;
  ServerClock& clock_;
  EmuBlock& block_;
};

void CppTarget::handle(IpbusServer::Job& job) {
  InfoCode code = InfoCode::Success;
  std::vector<uint32_t> out;
  const auto& a = job.access;
  const auto wall_start = std::chrono::steady_clock::now();
  const double sim_start_ns = sim_now_ns();
  stall_if_due("stalled on purpose (--inject-stall) before a request");
  uint32_t span = incrementing(a.type) ? std::max<uint32_t>(a.words, 1) : 1;
  if (a.addr < protocol::kControllerBase + protocol::kControllerWords && uint64_t{a.addr} + span <= protocol::kControllerWords) {
    thread_.set_activity("running a request: controller registers over AXI4-Lite");
    code = controller_access(a, out);
  } else if (a.addr >= protocol::kEmulatorBase && uint64_t{a.addr} + span <= uint64_t{protocol::kEmulatorBase} + protocol::kEmulatorWords) {
    thread_.set_activity("running a request: emulator control block (RUN_UNTIL and ADVANCE_NS run simulated time)");
    code = emulator_access(a, out);
  }
  else
    code = error_for(a.type);
  job.done(code, std::move(out));
  note_request(wall_start, sim_start_ns,
               [&] { return fmt::format("{} of {} word(s) at {:#010x}", ipbus::to_string(a.type), a.words, a.addr); });
}

// One AXI4-Lite transaction on the top's firmware port, at its cycle cost. The firmware shares
// the port: the caller holds clock_.bus_mutex(). Call from a SystemC thread.
AxilResult CppTarget::controller_transaction(bool write, uint32_t word, uint32_t data) {
  if (write) sim_.start_write(word * 4, data);
  else sim_.start_read(word * 4);
  while (!sim_.bus_result_ready()) sc_core::wait(clock_.bus_event());
  return *sim_.take_bus_result();
}

InfoCode CppTarget::controller_access(const Access& a, std::vector<uint32_t>& out) {
  if (!access_allowed(a, a.addr, [](uint32_t addr) { return mxtb::ocs::register_at(addr); })) return error_for(a.type);
  const bool rmw = is_rmw(a.type);
  InfoCode code = InfoCode::Success;
  thread_.run_in_sim([&] {
    clock_.bus_mutex().lock();
    auto xfer = [&](bool write, uint32_t word, uint32_t data) -> std::optional<uint32_t> {
      AxilResult r = controller_transaction(write, word, data);
      if (r.resp != 0) return std::nullopt;
      return r.data;
    };
    for (uint32_t i = 0; i < a.words || (rmw && i == 0); ++i) {
      uint32_t word = incrementing(a.type) ? a.addr + i : a.addr;
      std::optional<uint32_t> v;
      switch (a.type) {
        case TxType::Read:
        case TxType::NonIncRead:
          v = xfer(false, word, 0);
          if (v) out.push_back(*v);
          break;
        case TxType::Write:
        case TxType::NonIncWrite: v = xfer(true, word, a.body[i]); break;
        case TxType::RmwBits:
        case TxType::RmwSum:
          v = xfer(false, word, 0);
          if (v) {
            out.push_back(*v);
            uint32_t nv = a.type == TxType::RmwBits ? (*v & a.body[0]) | a.body[1] : *v + a.body[0];
            v = xfer(true, word, nv);
          }
          break;
      }
      if (!v) {
        code = error_for(a.type);
        break;
      }
      if (rmw) break;
    }
    clock_.bus_mutex().unlock();
  });
  if (code != InfoCode::Success) out.clear();
  return code;
}

InfoCode CppTarget::emulator_access(const Access& a, std::vector<uint32_t>& out) {
  if (!access_allowed(a, a.addr - protocol::kEmulatorBase, [](uint32_t addr) { return mxtb::emu::register_at(addr); }))
    return error_for(a.type);
  const bool rmw = is_rmw(a.type);
  for (uint32_t i = 0; i < a.words || (rmw && i == 0); ++i) {
    uint32_t offset = (incrementing(a.type) ? a.addr + i : a.addr) - protocol::kEmulatorBase;
    offset *= 4;
    if (a.type == TxType::Read || a.type == TxType::NonIncRead) {
      out.push_back(block_.read(offset));
    } else if (is_write(a.type)) {
      if (!block_.write(offset, a.body[i])) return error_for(a.type);
    } else {
      uint32_t old = block_.read(offset);
      uint32_t nv = a.type == TxType::RmwBits ? (old & a.body[0]) | a.body[1] : old + a.body[0];
      if (!block_.write(offset, nv)) return error_for(a.type);
      out.push_back(old);
      break;
    }
  }
  return InfoCode::Success;
}

}  // namespace

std::unique_ptr<RequestTarget> make_cpp_target(ServerSim& sim, ServerClock& clock, EmuBlock& block, SimThread& thread,
                                               StallInjection inject) {
  return std::make_unique<CppTarget>(sim, clock, block, thread, inject);
}

}  // namespace mxtb::sim
