// Inside ServerSim (sim/server/server_sim.h): the models one server runs, built and wired once for
// both engines (sim/server/engine.h), and the part of ServerSim::Impl that only reads or drives
// them. Not for users of the server.
//
// ServerModels<Ctl, Ep, kTrace> is the construction: the verilated board top (Ctl) and one link
// layer per lane (Ep), in one context, wired as the FPGA board fixes it before the first clock;
// the XPU behind every lane (traffic source, scoreboard, the receiver's faults); the reset; and
// what both engines do alike per link per clock (the XPU's side of a lane, a link's transition).
// The engines pick the model types: the reference engine the models built with the reference
// options or the traced ones, the fast engine the tuned, traced or 32-link ones.
#pragma once

#include "sim/server/engine.h"

#include "sim/common/rtl_assert.h"

#include "rtl/cov/coverage_dump.h"
#include "verilated.h"
#include "verilated_fst_c.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::sim {

template <class Ctl, class Ep, bool kTrace>
struct ServerModels {
  // Every model built in one context (FST-traced in ps when kTrace), every link wired to its lane
  // (XPU and lane number, enabled, no peer check yet, its interrupt cleared, ready to receive),
  // every XPU seeded; reset() still to run.
  explicit ServerModels(const ServerState& st)
      : lanes(st.cfg.shape.lanes_per_xpu),
        seed(st.cfg.seed),
        streams(st.cfg.streams_seed.value_or(st.cfg.seed)),
        first_lane(st.cfg.xpu_base * st.cfg.shape.lanes_per_xpu),
        period_ps(static_cast<uint64_t>(std::llround(1e6 / st.cfg.clock_mhz))) {
    const ServerConfig& cfg = st.cfg;
    ctx.randReset(0);
    catch_assertions(ctx);
    if constexpr (kTrace) {
      ctx.traceEverOn(true);
      ctx.timeunit(-12);
      ctx.timeprecision(-12);
    }
    ctl = std::make_unique<Ctl>(&ctx, "board");
    ctl->xpu_base_i = static_cast<uint8_t>(cfg.xpu_base);  // the board's straps
    for (int i = 0; i < st.n_links; ++i) {
      ep.push_back(std::make_unique<Ep>(&ctx, fmt::format("link{}", i).c_str()));
      Ep& e = *ep.back();
      e.xpu_id_i = static_cast<uint16_t>(cfg.xpu_base + i / lanes);
      e.lane_id_i = static_cast<uint8_t>(i % lanes);
      e.check_peer_i = 0;
      e.enable_i = 1;
      e.irq_clear_i = 1;
      e.rx_ready_i = 1;
      sources.emplace_back(stream_seed(streams, first_lane + i), cfg.traffic, source_rng_seed(cfg.seed, i));
      scoreboards.emplace_back(0, cfg.traffic, scoreboard_rng_seed(cfg.seed, i));
      faults.emplace_back(fault_rng_seed(cfg.seed, i));
    }
    board_stream.assign(static_cast<size_t>(st.n_links), kNoStream);
    last_state.assign(static_cast<size_t>(st.n_links), link::LinkState::Reset);
  }
  ServerModels(const ServerModels&) = delete;
  ServerModels& operator=(const ServerModels&) = delete;

  // The reset both engines give the models, `clock_all()` clocking every model through both
  // edges: the top's UDP, emulator and firmware ports idle; the asynchronous resets need a falling
  // edge, then clocks while low.
  template <class ClockAll>
  void reset(ClockAll clock_all) {
    port.drive(*ctl);
    bus.drive(*ctl);
    ctl->rst_ni = 1;
    for (auto& e : ep) e->rst_ni = 1;
    clock_all();
    ctl->rst_ni = 0;
    for (auto& e : ep) e->rst_ni = 0;
    for (int i = 0; i < 4; ++i) clock_all();
    ctl->rst_ni = 1;
    for (auto& e : ep) e->rst_ni = 1;
    clock_all();
  }
  // Every model, rising edge then falling edge, each evaluated.
  void clock_both_edges() {
    for (int level : {1, 0}) {
      ctl->clk_i = static_cast<uint8_t>(level);
      ctl->eval();
      for (auto& e : ep) {
        e->clk_i = static_cast<uint8_t>(level);
        e->eval();
      }
    }
  }

  // The XPU behind link i for this clock, from the link's outputs of the clock before: its
  // program's words on a lane a program owns, otherwise its traffic source's and scoreboard's.
  void drive_xpu(ServerState& st, int i, Ep& e, uint64_t cycle) {
    const size_t k = static_cast<size_t>(i);
    if (st.program_lane[k]) {
      drive_program_lane(st, i, e, cycle);
      return;
    }
    TrafficSource& src = sources[k];
    TrafficSource::Drive d = src.drive();
    e.tx_valid_i = d.valid;
    e.tx_data_i = d.data;
    e.tx_last_i = d.last;
    if (d.valid && e.tx_ready_o) src.fire();
    Scoreboard& sb = scoreboards[k];
    bool ready = sb.ready();
    e.rx_ready_i = ready;
    if (ready && e.rx_valid_o) sb.deliver(e.rx_data_o, e.rx_last_o, cycle);
  }

  // After link i's clock: whether its state changed since the last call. If so, `tr` says how (at
  // `cycle`, the clock after) and, when it became Active, the lane's scoreboard now follows
  // whichever XPU the link is connected to.
  bool take_transition(int i, const Ep& e, uint64_t cycle, LinkTransition& tr) {
    const size_t k = static_cast<size_t>(i);
    auto now_state = static_cast<link::LinkState>(e.state_o);
    link::LinkState& last = last_state[k];
    if (now_state == last) return false;
    tr = LinkTransition{cycle, i, last, now_state, static_cast<link::Reason>(e.reason_o)};
    last = now_state;
    if (now_state == link::LinkState::Active) {
      const uint64_t stream = stream_seed(streams, e.peer_xpu_o * lanes + e.peer_lane_o);
      if (board_stream[k] != stream) {
        scoreboards[k].resync(stream);
        board_stream[k] = stream;
      }
    }
    return true;
  }

  // A lane an XPU program owns (ServerSim::set_lane_program): its words instead of the lane's
  // traffic source and scoreboard.
  static void drive_program_lane(ServerState& st, int link, Ep& e, uint64_t cycle) {
    LaneProgram::Drive d = st.program->drive(link);
    e.tx_valid_i = d.valid;
    e.tx_data_i = d.data;
    e.tx_last_i = d.last;
    if (d.valid && e.tx_ready_o) st.program->fire(link);
    e.rx_ready_i = 1;
    if (e.rx_valid_o) {
      st.program->deliver(link, e.rx_data_o, e.rx_last_o, cycle);
      if (st.program->wants_attention()) st.stops.program_event = true;
    }
  }

  const int lanes;  // per XPU
  const uint64_t seed;
  VerilatedContext ctx;
  std::unique_ptr<Ctl> ctl;
  std::vector<std::unique_ptr<Ep>> ep;
  rtl::CoverageDump cov{ctx, "server"};  // after the models: writes before they go
  AxilMaster<Ctl> bus;                   // the top's firmware port
  BoardPort port;                        // the top's UDP and emulator-block ports
  std::vector<TrafficSource> sources;
  std::vector<Scoreboard> scoreboards;
  // The stream each scoreboard follows (stream_seed() of the peer's server seed and link); none yet.
  static constexpr uint64_t kNoStream = UINT64_MAX;
  std::vector<uint64_t> board_stream;
  const uint64_t streams;  // the XPUs' streams' seed (ServerConfig::streams_seed)
  const int first_lane;    // the rack-wide number of this board's lane 0
  std::deque<LaneFault> faults;   // a deque: BitErrors refers to its neighbour rng
  std::vector<link::LinkState> last_state;
  // The waveform (kTrace): every model into one FST file, in ps.
  std::unique_ptr<VerilatedFstC> fst;
  bool dumping = false;
  const uint64_t period_ps;
};

// ServerSim::Impl as far as it only reads or drives the models, the same for both engines; an
// engine adds its clock (run) and its profile.
template <class Ctl, class Ep, bool kTrace>
class ModelEngine : public ServerSim::Impl {
 public:
  BoardPort& board_port() override { return m_.port; }
  void start_read(uint32_t addr) override { m_.bus.start_read(addr); }
  void start_write(uint32_t addr, uint32_t data) override { m_.bus.start_write(addr, data); }
  bool bus_busy() const override { return m_.bus.busy(); }
  bool irq() const override { return m_.ctl->irq_o; }
  LinkView link_view(int i) const override {
    const Ep& e = *m_.ep.at(static_cast<size_t>(i));
    return LinkView{static_cast<link::LinkState>(e.state_o), static_cast<link::Reason>(e.reason_o),
                    EndpointIdentity{e.peer_xpu_o, e.peer_lane_o}, e.cnt_frames_tx_o, e.cnt_frames_rx_o,
                    e.cnt_crc_err_o, e.cnt_replays_o, e.cnt_retrains_o};
  }
  const TrafficSource& source(int i) const override { return m_.sources[static_cast<size_t>(i)]; }
  TrafficSource& source(int i) override { return m_.sources[static_cast<size_t>(i)]; }
  const Scoreboard& scoreboard(int i) const override { return m_.scoreboards[static_cast<size_t>(i)]; }
  LaneFault& lane_fault(int i) override { return m_.faults[static_cast<size_t>(i)]; }
  void finish() override {
    if constexpr (kTrace) {
      if (m_.fst) m_.fst->close();
    }
    m_.ctl->final();
    for (auto& e : m_.ep) e->final();
  }
  // Waveforms need the traced models (ServerConfig::trace_capable); the file opens on the first call.
  void start_waveform(const std::string& path) override {
    if constexpr (kTrace) {
      if (!m_.fst) {
        auto fst = std::make_unique<VerilatedFstC>();
        m_.ctl->trace(fst.get(), 99);
        for (auto& e : m_.ep) e->trace(fst.get(), 99);
        fst->open(path.c_str());
        if (!fst->isOpen()) throw std::runtime_error("cannot open waveform file " + path);
        m_.fst = std::move(fst);
      }
      m_.dumping = true;
    } else {
      (void)path;
      throw std::logic_error("server: waveforms need ServerConfig::trace_capable");
    }
  }
  void stop_waveform() override {
    m_.dumping = false;
    if constexpr (kTrace) {
      if (m_.fst) m_.fst->flush();
    }
  }
  bool waveform_on() const override { return m_.dumping; }

 protected:
  explicit ModelEngine(ServerState& st) : st_(st), m_(st) {}

  ServerState& st_;  // shared with ServerSim (sim/server/server_state.h)
  ServerModels<Ctl, Ep, kTrace> m_;
};

}  // namespace mxtb::sim
