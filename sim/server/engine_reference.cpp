// The reference engine of ServerSim (sim/server/engine.h): the emulated server as first written.
// Per clock, every port rewired and every model evaluated at both edges; the models built with the
// reference options (MXTB_REFERENCE_MODELS) or with FST tracing. The fast engine is compared
// against it, clock for clock (testbench/sim/test_server_engines.cpp).
#include "sim/server/engine.h"
#include "sim/common/rtl_assert.h"

#ifdef MXTB_HAVE_REFERENCE_MODELS
#include "Vlink_endpoint_ref.h"
#include "Vmxtb_board_ref.h"
#else
#include "Vlink_endpoint.h"
#include "Vmxtb_board.h"
#endif
#include "Vlink_endpoint_trace.h"
#include "Vmxtb_board_trace.h"
#include "rtl/cov/coverage_dump.h"
#include "verilated.h"
#include "verilated_fst_c.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <stdexcept>

namespace mxtb::sim {

namespace {

template <class W>
uint32_t get_bits(const W& w, int lsb, int width) {
  uint64_t word = w[lsb / 32];
  if (lsb % 32 + width > 32) word |= uint64_t{w[lsb / 32 + 1]} << 32;
  return static_cast<uint32_t>((word >> (lsb % 32)) & ((uint64_t{1} << width) - 1));
}

template <class W>
void set_bits(W& w, int lsb, int width, uint32_t value) {
  for (int b = 0; b < width; ++b) {
    int bit = lsb + b;
    uint32_t mask = 1u << (bit % 32);
    if ((value >> b) & 1u) w[bit / 32] |= mask;
    else w[bit / 32] &= ~mask;
  }
}

template <class Ep>
Raw66 lane_out(const Ep& m) {
  return Raw66{uint64_t{m.lane_tx_o[0]} | (uint64_t{m.lane_tx_o[1]} << 32), static_cast<uint8_t>(m.lane_tx_o[2] & 3u)};
}

template <class Ep>
void lane_in(Ep& m, const ReceivedBlock& r) {
  m.lane_rx_i[0] = static_cast<uint32_t>(r.raw.lo);
  m.lane_rx_i[1] = static_cast<uint32_t>(r.raw.lo >> 32);
  m.lane_rx_i[2] = r.raw.hi;
  m.lane_sd_i = r.signal_detect;
}

#ifdef MXTB_HAVE_REFERENCE_MODELS
using ReferenceController = Vmxtb_board_ref;
using ReferenceEndpoint = Vlink_endpoint_ref;
#else
using ReferenceController = Vmxtb_board;
using ReferenceEndpoint = Vlink_endpoint;
#endif

}  // namespace

// The reference engine: the RTL models (plain or built with FST tracing), the XPUs, the fibres,
// the photodiode queue; per clock, every port rewired and every model evaluated at both edges.
template <class Ctl, class Ep, bool kTrace>
class ReferenceEngine final : public ServerSim::Impl {
 public:
  ServerState& st_;  // shared with ServerSim (sim/server/server_state.h)
  std::vector<TrafficSource> sources;
  std::vector<Scoreboard> boards;
  std::vector<int> board_stream;  // link whose stream each scoreboard follows; -1: none yet
  std::vector<std::deque<ReceivedBlock>> fibre;
  std::deque<std::pair<uint64_t, int>> pd_queue;  // (cycle due, port)
  std::vector<link::LinkState> last_state;
  std::deque<LaneFault> lane_faults;  // a deque: BitErrors refers to its neighbour rng
  bool last_irq = false;
  double settle_until_ns = 0;

  VerilatedContext ctx;
  std::unique_ptr<Ctl> ctl;
  std::vector<std::unique_ptr<Ep>> ep;
  rtl::CoverageDump cov{ctx, "server"};  // after the models: writes before they go
  AxilMaster<Ctl> bus;
  BoardPort port;
  std::unique_ptr<VerilatedFstC> fst;
  bool dumping = false;
  uint64_t period_ps = 6400;

  // One clock of every model: rising edge, then falling edge.
  void clock_all(uint64_t cycle) {
    for (int level : {1, 0}) {
      {
        Timer t(profiling ? &prof.controller_s : nullptr);
        ctl->clk_i = static_cast<uint8_t>(level);
        ctl->eval();
      }
      Timer t(profiling ? &prof.links_s : nullptr);
      for (auto& e : ep) {
        e->clk_i = static_cast<uint8_t>(level);
        e->eval();
      }
      if constexpr (kTrace) {
        if (dumping) fst->dump(cycle * period_ps + (level ? 0 : period_ps / 2));
      }
    }
  }

  explicit ReferenceEngine(ServerState& st) : st_(st), profiling(st.cfg.profile) { build(); }
  ReferenceEngine(const ReferenceEngine&) = delete;
  ReferenceEngine& operator=(const ReferenceEngine&) = delete;
  void build();
  void one_cycle();
  uint64_t run(uint64_t max_cycles) override {
    Timer t(profiling ? &prof.step_s : nullptr);
    uint64_t n = 0;
    while (n < max_cycles) {
      one_cycle();
      ++n;
      if (st_.stops.any()) break;
    }
    prof.cycles += n;
    return n;
  }
  ServerProfile profile() const override { return prof; }
  // ServerConfig::profile: time spent per component.
  bool profiling = false;
  ServerProfile prof;
  class Timer {
   public:
    explicit Timer(double* sink) : sink_(sink) {
      if (sink_) t0_ = std::chrono::steady_clock::now();
    }
    ~Timer() {
      if (sink_) *sink_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    }
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;

   private:
    double* sink_;
    std::chrono::steady_clock::time_point t0_{};
  };
  // A timer started and stopped by hand, for stretches that are not a scope.
  struct Lap {
    double* sink = nullptr;
    std::chrono::steady_clock::time_point t0{};
    void start(double* s) {
      sink = s;
      if (sink) t0 = std::chrono::steady_clock::now();
    }
    void stop() {
      if (sink) *sink += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      sink = nullptr;
    }
  };
  const TrafficSource& source(int i) const override { return sources[static_cast<size_t>(i)]; }
  TrafficSource& source(int i) override { return sources[static_cast<size_t>(i)]; }
  const Scoreboard& board(int i) const override { return boards[static_cast<size_t>(i)]; }
  LaneFault& lane_fault(int i) override { return lane_faults[static_cast<size_t>(i)]; }
  BoardPort& board_port() override { return port; }
  void start_read(uint32_t addr) override { bus.start_read(addr); }
  void start_write(uint32_t addr, uint32_t data) override { bus.start_write(addr, data); }
  bool bus_busy() const override { return bus.busy(); }
  bool irq() const override { return ctl->irq_o; }
  LinkView link_view(int i) const override {
    const Ep& e = *ep.at(static_cast<size_t>(i));
    return LinkView{static_cast<link::LinkState>(e.state_o), static_cast<link::Reason>(e.reason_o),
                    EndpointIdentity{e.peer_xpu_o, e.peer_lane_o}, e.cnt_frames_tx_o, e.cnt_frames_rx_o,
                    e.cnt_crc_err_o, e.cnt_replays_o, e.cnt_retrains_o};
  }
  void finish() override {
    if constexpr (kTrace) {
      if (fst) fst->close();
    }
    ctl->final();
    for (auto& e : ep) e->final();
  }
  void start_waveform(const std::string& path) override {
    if constexpr (kTrace) {
      if (!fst) fst = open_server_waveform(*ctl, ep, path);
      dumping = true;
    } else {
      (void)path;
      throw std::logic_error("server: waveforms need ServerConfig::trace_capable");
    }
  }
  void stop_waveform() override {
    dumping = false;
    if constexpr (kTrace) {
      if (fst) fst->flush();
    }
  }
  bool waveform_on() const override { return dumping; }
  void refresh_light() {
    st_.light = st_.mesh->propagate(st_.now_ns());
    st_.light_dirty = false;
    st_.last_light_cycle = st_.cycle;
  }
};

std::unique_ptr<ServerSim::Impl> make_reference_engine(ServerState& s) {
  if (s.cfg.trace_capable)
    return std::make_unique<ReferenceEngine<Vmxtb_board_trace, Vlink_endpoint_trace, true>>(s);
  return std::make_unique<ReferenceEngine<ReferenceController, ReferenceEndpoint, false>>(s);
}

template <class Ctl, class Ep, bool kTrace>
void ReferenceEngine<Ctl, Ep, kTrace>::build() {
  const ServerConfig& cfg = st_.cfg;
  const auto& s = cfg.shape;
  const int n_links = st_.n_links;
  period_ps = static_cast<uint64_t>(std::llround(1e6 / cfg.clock_mhz));
  ctx.randReset(0);
  catch_assertions(ctx);
  if constexpr (kTrace) {
    ctx.traceEverOn(true);
    ctx.timeunit(-12);
    ctx.timeprecision(-12);
  }
  ctl = std::make_unique<Ctl>(&ctx, "board");
  for (int i = 0; i < n_links; ++i) {
    ep.push_back(std::make_unique<Ep>(&ctx, fmt::format("link{}", i).c_str()));
    Ep& e = *ep.back();
    e.xpu_id_i = static_cast<uint16_t>(i / s.lanes_per_xpu);
    e.lane_id_i = static_cast<uint8_t>(i % s.lanes_per_xpu);
    e.check_peer_i = 0;
    e.enable_i = 1;
    e.irq_clear_i = 1;
    e.rx_ready_i = 1;
    sources.emplace_back(stream_seed(cfg.seed, i), cfg.traffic, source_rng_seed(cfg.seed, i));
    boards.emplace_back(0, cfg.traffic, board_rng_seed(cfg.seed, i));
    board_stream.push_back(-1);
    fibre.emplace_back(cfg.fibre_latency_cycles, ReceivedBlock{});
    lane_faults.emplace_back(fault_rng_seed(cfg.seed, i));
  }
  last_state.assign(static_cast<size_t>(n_links), link::LinkState::Reset);
  // Reset everything: the asynchronous resets need a falling edge, then clocks while low. The
  // top's UDP and emulator ports idle, its firmware port too.
  port.drive(*ctl);
  bus.drive(*ctl);
  ctl->rst_ni = 1;
  for (auto& e : ep) e->rst_ni = 1;
  clock_all(0);
  ctl->rst_ni = 0;
  for (auto& e : ep) e->rst_ni = 0;
  for (int i = 0; i < 4; ++i) clock_all(0);
  ctl->rst_ni = 1;
  for (auto& e : ep) e->rst_ni = 1;
  clock_all(0);
}

template <class Ctl, class Ep, bool kTrace>
void ReferenceEngine<Ctl, Ep, kTrace>::one_cycle() {
  ServerState& st = st_;
  auto& m = *this;
  const ServerConfig& cfg_ = st.cfg;
  auto& mesh_ = st.mesh;
  auto& alive_ = st.alive;
  auto& cycle_ = st.cycle;
  auto& light_ = st.light;
  auto& light_dirty_ = st.light_dirty;
  auto& rng_ = st.rng;
  auto& dac_writes_ = st.dac_writes;
  auto& pd_reads_ = st.pd_reads;
  auto& bus_result_ = st.bus_result;
  auto& bus_done_ = st.stops.bus_done;
  auto& irq_rose_ = st.stops.irq_rose;
  auto& transitions_ = st.transitions;
  auto& link_changed_ = st.stops.link_changed;
  const int lanes = cfg_.shape.lanes_per_xpu;
  const int n_links = st.n_links;
  const double now = st.now_ns();

  Lap lap;
  lap.start(profiling ? &prof.mesh_s : nullptr);
  for (int i = 0; i < n_links; ++i) {
    bool lit = alive_[static_cast<size_t>(i / lanes)] && m.ep[static_cast<size_t>(i)]->laser_o;
    if (mesh_->input_lit(i) != lit) {
      mesh_->set_input_lit(i, lit);
      light_dirty_ = true;
    }
  }
  bool moving = now < m.settle_until_ns + st.period_ns() * cfg_.mesh_update_cycles;
  if (light_dirty_ || (moving && cycle_ - st.last_light_cycle >= cfg_.mesh_update_cycles)) refresh_light();
  lap.stop();

  // Light through the mesh, then down the fibre to each receiver.
  lap.start(profiling ? &prof.stage_s : nullptr);
  for (int o = 0; o < n_links; ++o) {
    const OutputReading& r = light_.outputs[static_cast<size_t>(st.rx_source[static_cast<size_t>(o)])];
    Raw66 word{};
    if (r.dominant_input >= 0 && r.dominant_input < n_links) word = lane_out(*m.ep[static_cast<size_t>(r.dominant_input)]);
    auto& line = m.fibre[static_cast<size_t>(o)];
    ReceivedBlock rx = receive_block(r.verdict, word, rng_);
    auto& fault = m.lane_faults[static_cast<size_t>(o)];
    if (cycle_ < fault.dark_until_cycle) rx = ReceivedBlock{Raw66{}, false};
    else if (rx.signal_detect) rx.raw = fault.errors.apply(rx.raw);
    line.push_back(rx);
    lane_in(*m.ep[static_cast<size_t>(o)], line.front());
    line.pop_front();
  }

  lap.stop();

  // The FPGA's wiring between the controller and the link layers.
  for (int i = 0; i < n_links; ++i) {
    Ep& e = *m.ep[static_cast<size_t>(i)];
    set_bits(m.ctl->link_state_i, 4 * i, 4, e.state_o);
    set_bits(m.ctl->link_reason_i, 4 * i, 4, e.reason_o);
    e.enable_i = 1;
    e.check_peer_i = (m.ctl->link_check_o >> i) & 1u;
    e.retrain_req_i = (m.ctl->link_retrain_o >> i) & 1u;
    e.expect_xpu_i = static_cast<uint16_t>(get_bits(m.ctl->link_expect_xpu_o, 8 * i, 8));
    e.expect_lane_i = static_cast<uint8_t>(get_bits(m.ctl->link_expect_lane_o, 8 * i, 8));
  }

  // XPUs behind the lanes.
  lap.start(profiling ? &prof.xpu_s : nullptr);
  for (int i = 0; i < n_links; ++i) {
    Ep& e = *m.ep[static_cast<size_t>(i)];
    if (drive_program_lane(st, e, i, cycle_)) continue;
    auto& src = m.sources[static_cast<size_t>(i)];
    TrafficSource::Drive d = src.drive();
    e.tx_valid_i = d.valid;
    e.tx_data_i = d.data;
    e.tx_last_i = d.last;
    if (d.valid && e.tx_ready_o) src.fire();
    auto& sb = m.boards[static_cast<size_t>(i)];
    bool ready = sb.ready();
    e.rx_ready_i = ready;
    if (ready && e.rx_valid_o) sb.deliver(e.rx_data_o, e.rx_last_o, cycle_);
  }

  lap.stop();

  // The mesh side of the controller: DAC writes and photodiode reads.
  lap.start(profiling ? &prof.mesh_s : nullptr);
  if (m.ctl->dac_valid_o) {
    mesh_->write_dac(m.ctl->dac_elem_o, m.ctl->dac_code_o, now);
    ++dac_writes_;
    light_dirty_ = true;
    m.settle_until_ns = std::max(m.settle_until_ns, mesh_->settled_at_ns(kSettleToleranceRad));
  }
  if (m.ctl->pd_req_o) m.pd_queue.push_back({cycle_ + cfg_.pd_latency_cycles, m.ctl->pd_port_o});
  m.ctl->pd_valid_i = 0;
  if (!m.pd_queue.empty() && m.pd_queue.front().first <= cycle_) {
    m.ctl->pd_valid_i = 1;
    m.ctl->pd_dbm_i = static_cast<uint16_t>(mesh_->monitor_code(m.pd_queue.front().second, now));
    m.pd_queue.pop_front();
    ++pd_reads_;
  }

  lap.stop();
  bool board_event;
  {
    Timer t(profiling ? &prof.controller_s : nullptr);
    board_event = drive_board_ports(*m.ctl, m.bus, m.port, &st.emu_responder);
  }

  m.clock_all(cycle_);
  ++cycle_;
  check_assertions(m.ctx, cycle_);
  if (board_event) st.stops.board_event = true;

  if (auto r = m.bus.sample()) {
    bus_result_ = r;
    bus_done_ = true;
  }
  bool irq_now = m.ctl->irq_o;
  if (irq_now && !m.last_irq) irq_rose_ = true;
  m.last_irq = irq_now;

  for (int i = 0; i < n_links; ++i) {
    Ep& e = *m.ep[static_cast<size_t>(i)];
    auto now_state = static_cast<link::LinkState>(e.state_o);
    auto& last = m.last_state[static_cast<size_t>(i)];
    if (now_state == last) continue;
    transitions_.push_back(LinkTransition{cycle_, i, last, now_state, static_cast<link::Reason>(e.reason_o)});
    link_changed_ = true;
    last = now_state;
    if (now_state == link::LinkState::Active) {
      // The scoreboard follows whichever XPU this lane is now connected to.
      int peer_link = e.peer_xpu_o * lanes + e.peer_lane_o;
      if (m.board_stream[static_cast<size_t>(i)] != peer_link) {
        m.boards[static_cast<size_t>(i)].resync(stream_seed(cfg_.seed, peer_link));
        m.board_stream[static_cast<size_t>(i)] = peer_link;
      }
    }
  }
}

}  // namespace mxtb::sim
