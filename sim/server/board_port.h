// The board top's two ports whose far side the emulator plays (rtl/board/mxtb_board.sv), advanced
// a clock at a time by the server engine that clocks the top with the link layers
// (sim/server/engine.h): the UDP core's payload streams, one datagram at a time (AXI4-Stream, the
// payload's first byte in tdata[31:24], tkeep on the last beat, as ipbus_transactor takes it), and
// the emulator's control block behind the m_emu_* AXI4-Lite port, whose accesses wait here until
// the emulator answers them (sim/emulator/emu_block.h, sim/emulator/rtl_target.cpp). A board has neither: its UDP core and no such block.
//
// The emulator answers an access of its block at once, within the clock (EmuResponder: reads of
// its registers, writes that only set one), the port then answering as the board's block RAM does:
// the response the next clock, the next request taken in the clock a response is. An access that
// needs the emulator outside the clock (one that runs simulated time or touches the server) stops
// step() instead, and waits for answer_emulator().
//
// Per clock while busy(): drive() sets the top's inputs; when it changed one, the engine settles
// the top's combinational logic with the clock low (the transactor may start a bus access in the
// cycle a response arrives); sample() reads the handshakes the rising edge will take. Copyable,
// so that the fast engine's checkpoints hold it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::sim {

struct DatagramOutcome {
  std::optional<std::vector<uint8_t>> reply;  // nullopt: dropped, no reply
  uint8_t kind = 3;                           // the stat port: 0 control, 1 status, 2 resend, 3 dropped
  uint8_t fault = 15;                         // protocol/ipbus/target.h's Fault as a number, 15 none
  uint64_t cycles = 0;                        // board clocks from the first beat offered to the outcome
  uint64_t emulator_wait_cycles = 0;          // of them, clocks an emulator-block access waited for its answer
};

// One access of the emulator's control block: a byte offset within the block.
struct EmuAccess {
  bool write = false;
  uint32_t offset = 0;
  uint32_t data = 0;  // write data
};

// An answer (ok, read data) for an access of the emulator's block, or nullopt: not within the clock.
using EmuResponder = std::function<std::optional<std::pair<bool, uint32_t>>(const EmuAccess&)>;

class BoardPort {
 public:
  bool busy() const { return datagram_ != nullptr; }
  // 1..65535 bytes; one datagram at a time.
  void start(std::vector<uint8_t> datagram) {
    if (busy()) throw std::logic_error("BoardPort::start: a datagram is still in flight");
    if (datagram.empty() || datagram.size() > 65535)
      throw std::invalid_argument("BoardPort::start: a datagram of " + std::to_string(datagram.size()) + " bytes (want 1..65535)");
    datagram_ = std::make_shared<const std::vector<uint8_t>>(std::move(datagram));
    beat_ = 0;
    reply_.clear();
    reply_done_ = stat_seen_ = false;
    kind_ = 3;
    fault_ = 15;
    cycles_ = wait_cycles_ = 0;
    outcome_.reset();
  }
  // The datagram's outcome, once: the clock it is ready, step() stops.
  std::optional<DatagramOutcome> take_outcome() {
    std::optional<DatagramOutcome> o;
    o.swap(outcome_);
    return o;
  }
  bool outcome_ready() const { return outcome_.has_value(); }
  // The access of the emulator's block the top made and nobody answered yet (step() stopped the
  // clock it was made). The transactor waits for it without a timeout.
  const std::optional<EmuAccess>& emulator_access() const { return emu_; }
  void answer_emulator(bool ok, uint32_t read_data) {
    if (!emu_) throw std::logic_error("BoardPort::answer_emulator: no access of the emulator's block is waiting");
    resp_write_ = emu_->write;
    resp_error_ = !ok;
    resp_data_ = ok ? read_data : 0;
    resp_pending_ = true;
    emu_.reset();
  }
  bool waiting_for_emulator() const { return emu_.has_value(); }

  // Before the rising edge. Returns whether an input changed since the last drive. The top's
  // readies for a response follow its state alone (the transactor's bus state through the
  // decoder), so they are read here, before the top is settled with these inputs.
  template <class M>
  bool drive(M& m) {
    const size_t n_beats = datagram_ ? (datagram_->size() + 3) / 4 : 0;
    uint32_t data = 0;
    size_t n = 0;
    if (beat_ < n_beats) {
      const auto& d = *datagram_;
      const size_t at = beat_ * 4;
      n = std::min<size_t>(4, d.size() - at);
      for (size_t i = 0; i < n; ++i) data |= uint32_t{d[at + i]} << (24 - 8 * i);
    }
    const bool resp_ends = resp_pending_ && (resp_write_ ? m.m_emu_bready : m.m_emu_rready);
    const bool idle = !emu_ && (!resp_pending_ || resp_ends);
    Inputs in;
    in.tvalid = beat_ < n_beats;
    in.tdata = data;
    in.tlast = beat_ + 1 == n_beats;
    in.tkeep = beat_ + 1 == n_beats ? static_cast<uint8_t>((0xF0u >> n) & 0xF) : 0xF;
    // One access at a time; the next request is taken in the clock a response is.
    in.awready = idle && !aw_taken_;
    in.wready = idle && !w_taken_;
    in.arready = idle && !aw_taken_ && !w_taken_;
    in.bvalid = resp_pending_ && resp_write_;
    in.rvalid = resp_pending_ && !resp_write_;
    in.resp = resp_error_ ? 2 : 0;  // SLVERR
    in.rdata = resp_data_;
    const bool changed = !(in == last_);
    last_ = in;
    m.s_axis_tvalid = in.tvalid;
    m.s_axis_tdata = in.tdata;
    m.s_axis_tlast = in.tlast;
    m.s_axis_tkeep = in.tkeep;
    m.m_axis_tready = 1;
    m.m_emu_awready = in.awready;
    m.m_emu_wready = in.wready;
    m.m_emu_arready = in.arready;
    m.m_emu_bvalid = in.bvalid;
    m.m_emu_rvalid = in.rvalid;
    m.m_emu_bresp = in.resp;
    m.m_emu_rresp = in.resp;
    m.m_emu_rdata = in.rdata;
    return changed;
  }

  // Before the rising edge, the top settled with drive()'s inputs: what the edge takes. Returns
  // true when the emulator is wanted after this clock: the outcome is ready, or the top made an
  // access of the emulator's block that `respond` (may be null) did not answer within the clock.
  template <class M>
  bool sample(const M& m, const EmuResponder* respond) {
    if (!datagram_) return false;
    ++cycles_;
    if (emu_) ++wait_cycles_;
    const size_t n_beats = (datagram_->size() + 3) / 4;
    if (m.s_axis_tvalid && m.s_axis_tready) ++beat_;
    if (m.m_axis_tvalid) {
      const uint32_t w = m.m_axis_tdata;
      for (int s = 24; s >= 0; s -= 8) reply_.push_back(static_cast<uint8_t>(w >> s));
      reply_done_ = m.m_axis_tlast;
    }
    if (m.stat_valid_o) {
      stat_seen_ = true;
      kind_ = m.stat_kind_o;
      fault_ = m.stat_fault_o;
    }
    bool wanted = false;
    if ((m.m_emu_bvalid && m.m_emu_bready) || (m.m_emu_rvalid && m.m_emu_rready)) resp_pending_ = false;
    auto taken = [&](const EmuAccess& a) {
      if (respond && *respond) {
        if (auto r = (*respond)(a)) {
          resp_write_ = a.write;
          resp_error_ = !r->first;
          resp_data_ = r->first ? r->second : 0;
          resp_pending_ = true;
          return;
        }
      }
      emu_ = a;
      wanted = true;
    };
    if (m.m_emu_arvalid && m.m_emu_arready) taken(EmuAccess{false, m.m_emu_araddr, 0});
    if (m.m_emu_awvalid && m.m_emu_awready) {
      aw_taken_ = true;
      aw_addr_ = m.m_emu_awaddr;
    }
    if (m.m_emu_wvalid && m.m_emu_wready) {
      w_taken_ = true;
      w_data_ = m.m_emu_wdata;
    }
    if (aw_taken_ && w_taken_) {
      aw_taken_ = w_taken_ = false;
      taken(EmuAccess{true, aw_addr_, w_data_});
    }
    if (beat_ == n_beats && stat_seen_ && (reply_done_ || kind_ == 3)) {
      DatagramOutcome o;
      if (!reply_.empty()) o.reply = std::move(reply_);
      o.kind = kind_;
      o.fault = fault_;
      o.cycles = cycles_;
      o.emulator_wait_cycles = wait_cycles_;
      outcome_ = std::move(o);
      datagram_.reset();
      reply_.clear();
      wanted = true;
    }
    return wanted;
  }

  // Board clocks the datagram in flight has taken so far, and of them, waiting for the emulator.
  uint64_t cycles() const { return cycles_; }
  uint64_t emulator_wait_cycles() const { return wait_cycles_; }
  size_t beats_taken() const { return beat_; }
  size_t reply_bytes() const { return reply_.size(); }
  bool decided() const { return stat_seen_; }

 private:
  struct Inputs {
    uint8_t tvalid = 0, tlast = 0, tkeep = 0, awready = 0, wready = 0, arready = 0, bvalid = 0, rvalid = 0, resp = 0;
    uint32_t tdata = 0, rdata = 0;
    bool operator==(const Inputs& o) const {
      return tvalid == o.tvalid && tlast == o.tlast && tkeep == o.tkeep && awready == o.awready && wready == o.wready &&
             arready == o.arready && bvalid == o.bvalid && rvalid == o.rvalid && resp == o.resp && tdata == o.tdata &&
             rdata == o.rdata;
    }
  };
  std::shared_ptr<const std::vector<uint8_t>> datagram_;  // shared: checkpoints copy the port
  size_t beat_ = 0;
  std::vector<uint8_t> reply_;
  bool reply_done_ = false, stat_seen_ = false;
  uint8_t kind_ = 3, fault_ = 15;
  uint64_t cycles_ = 0, wait_cycles_ = 0;
  std::optional<DatagramOutcome> outcome_;
  std::optional<EmuAccess> emu_;
  bool aw_taken_ = false, w_taken_ = false;
  uint32_t aw_addr_ = 0, w_data_ = 0;
  bool resp_pending_ = false, resp_write_ = false, resp_error_ = false;
  uint32_t resp_data_ = 0;
  Inputs last_{};
};

}  // namespace mxtb::sim
