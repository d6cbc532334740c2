// The RTL target (`mxtb sim --ipbus-target rtl`, the default): the socket is the board's UDP core
// (ipbus_server.h, raw mode), and each datagram goes whole into the board top's UDP port
// (sim/server/board_port.h) from the current simulated time, the server clocked with it, until its
// outcome: a reply or none. The accesses the top's transactor makes of the emulator's block are
// answered by the block, within the clock where its registers say so (the responder set here),
// else with the step stopped, here, between kernel runs (RUN_UNTIL and ADVANCE_NS run simulated
// time first, the transactor waiting without a timeout). What the transactor did is counted here,
// as the C++ target counts (emu.IPBUS_STATS).
#include "sim/emulator/ipbus_target.h"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

namespace mxtb::sim {

namespace {

namespace ipbus = protocol::ipbus;

class RtlTarget : public RequestTarget {
 public:
  RtlTarget(ServerSim& sim, ServerClock& clock, EmuBlock& block, SimThread& thread, EmuLog& log, StallInjection inject)
      : RequestTarget(thread, inject), sim_(sim), clock_(clock), block_(block), log_(log) {
    sim_.set_emulator_responder([this](const EmuAccess& a) { return block_.answer_within_clock(a); });
  }
  IpbusServer::Mode socket_mode() const override { return IpbusServer::Mode::Raw; }
  const char* describe() const override { return "rtl (rtl/board/mxtb_board.sv: the top's transactor, decoder, block RAM)"; }
  bool serve_one(std::chrono::microseconds timeout) override {
    auto d = server_->next_datagram(timeout);
    if (d) handle(*d);
    return d.has_value();
  }
  ipbus::TargetStats stats() const override { return stats_; }

 private:
  void handle(IpbusServer::Datagram& d);
  DatagramOutcome run_datagram(const std::vector<uint8_t>& bytes);

  // A transactor that has not finished within this many clocks of its own (those spent waiting for
  // the emulator not counted) has hung.
  static constexpr uint64_t kDatagramCycleBound = 10'000'000;
  ServerSim& sim_;
  ServerClock& clock_;
  EmuBlock& block_;
  EmuLog& log_;
  ipbus::TargetStats stats_;
};

void RtlTarget::handle(IpbusServer::Datagram& d) {
  const auto wall_start = std::chrono::steady_clock::now();
  const double sim_start_ns = sim_now_ns();
  stall_if_due("stalled on purpose (--inject-stall) before a datagram");
  const DatagramOutcome o = run_datagram(d.bytes);
  ++stats_.datagrams;
  if (o.kind == 0) ++stats_.control;
  if (o.kind == 1) ++stats_.status;
  if (o.kind == 2) ++stats_.resends_served;
  if (o.kind == 0 && o.reply) stats_.transactions += ipbus::executed_transactions(*o.reply);
  if (o.fault < static_cast<uint8_t>(ipbus::Fault::kCount)) {
    ++stats_.faults[o.fault];
    log_.ipbus_fault(static_cast<ipbus::Fault>(o.fault),
                     fmt::format("RTL transactor: a datagram of {} bytes, {}", d.bytes.size(), o.reply ? "answered" : "dropped"));
  }
  d.reply(o.reply);
  note_request(wall_start, sim_start_ns,
               [&] { return fmt::format("a datagram of {} bytes, {} board cycles", d.bytes.size(), o.cycles); });
}

// The datagram from the current simulated time to its outcome; std::runtime_error naming it when
// the transactor hung (kDatagramCycleBound).
DatagramOutcome RtlTarget::run_datagram(const std::vector<uint8_t>& bytes) {
  bool started = false, hung = false;
  for (;;) {
    thread_.set_activity("running a datagram through the RTL transactor");
    thread_.run_in_sim([&] {
      if (!started) sim_.start_datagram(bytes);
      started = true;
      const BoardPort& p = sim_.board_port();
      while (!p.waiting_for_emulator() && !p.outcome_ready()) {
        sc_core::wait(clock_.period() * 1e6, clock_.board_event());  // timed: a hung transactor makes no event
        if (p.busy() && p.cycles() - p.emulator_wait_cycles() > kDatagramCycleBound) {
          hung = true;
          return;
        }
      }
    });
    if (hung) {
      const BoardPort& p = sim_.board_port();
      throw std::runtime_error(fmt::format("the IPbus transactor hung: {} cycles on one datagram of {} bytes ({} of {} beats "
                                           "taken, {}, {} reply bytes)",
                                           p.cycles() - p.emulator_wait_cycles(), bytes.size(), p.beats_taken(),
                                           (bytes.size() + 3) / 4, p.decided() ? "decided" : "not decided", p.reply_bytes()));
    }
    if (auto o = sim_.take_datagram_outcome()) return std::move(*o);
    const EmuAccess a = *sim_.emulator_access();
    thread_.set_activity("running a datagram through the RTL transactor: the emulator control block");
    bool ok = true;
    uint32_t data = 0;
    if (a.write) ok = block_.write(a.offset, a.data);
    else data = block_.read(a.offset);
    sim_.answer_emulator(ok, data);
  }
}

}  // namespace

std::unique_ptr<RequestTarget> make_rtl_target(ServerSim& sim, ServerClock& clock, EmuBlock& block, SimThread& thread,
                                               EmuLog& log, StallInjection inject) {
  return std::make_unique<RtlTarget>(sim, clock, block, thread, log, inject);
}

}  // namespace mxtb::sim
