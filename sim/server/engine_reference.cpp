// The reference engine of ServerSim (sim/server/engine.h): the emulated server as first written.
// Per clock, every port rewired and every model evaluated at both edges; the models built with the
// reference options (MXTB_REFERENCE_MODELS) or with FST tracing. The fast engine is compared
// against it, clock for clock (testbench/sim/test_server_engines.cpp).
#include "sim/server/engine.h"
#include "sim/server/server_models.h"

#ifdef MXTB_HAVE_REFERENCE_MODELS
#include "Vlink_endpoint_ref.h"
#include "Vmxtb_board_ref.h"
#else
#include "Vlink_endpoint.h"
#include "Vmxtb_board.h"
#endif
#include "Vlink_endpoint_trace.h"
#include "Vmxtb_board_trace.h"

#include <algorithm>
#include <chrono>
#include <deque>

namespace mxtb::sim {

namespace {

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

// A timer started and stopped by hand, for stretches that are not a scope.
struct Lap {
  double* sink = nullptr;
  std::chrono::steady_clock::time_point t0{};
  void start(double* s) {
    sink = s;
    if (sink) t0 = std::chrono::steady_clock::now();
  }
  void stop() {
    if (sink) *sink += seconds_since(t0);
    sink = nullptr;
  }
};

#ifdef MXTB_HAVE_REFERENCE_MODELS
using ReferenceController = Vmxtb_board_ref;
using ReferenceEndpoint = Vlink_endpoint_ref;
#else
using ReferenceController = Vmxtb_board;
using ReferenceEndpoint = Vlink_endpoint;
#endif

}  // namespace

// The reference engine: the models (plain or built with FST tracing, sim/server/server_models.h),
// the XPUs, the fibres, the photodiode queue.
template <class Ctl, class Ep, bool kTrace>
class ReferenceEngine final : public ModelEngine<Ctl, Ep, kTrace> {
  using Base = ModelEngine<Ctl, Ep, kTrace>;
  using Base::m_;
  using Base::st_;

 public:
  explicit ReferenceEngine(ServerState& st) : Base(st), profiling(st.cfg.profile) {
    for (int i = 0; i < st.n_links; ++i) fibre.emplace_back(st.cfg.fibre_latency_cycles, ReceivedBlock{});
    m_.reset([this] { clock_all(0); });
  }
  ReferenceEngine(const ReferenceEngine&) = delete;
  ReferenceEngine& operator=(const ReferenceEngine&) = delete;

  uint64_t run(uint64_t max_cycles) override {
    Stopwatch t(profiling ? &prof.step_s : nullptr);
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

 private:
  void one_cycle();
  // One clock of every model: rising edge, then falling edge.
  void clock_all(uint64_t cycle) {
    for (int level : {1, 0}) {
      {
        Stopwatch t(profiling ? &prof.controller_s : nullptr);
        m_.ctl->clk_i = static_cast<uint8_t>(level);
        m_.ctl->eval();
      }
      Stopwatch t(profiling ? &prof.links_s : nullptr);
      for (auto& e : m_.ep) {
        e->clk_i = static_cast<uint8_t>(level);
        e->eval();
      }
      if constexpr (kTrace) {
        if (m_.dumping) m_.fst->dump(cycle * m_.period_ps + (level ? 0 : m_.period_ps / 2));
      }
    }
  }
  void refresh_light() {
    st_.light = st_.mesh->propagate(st_.now_ns());
    st_.light_dirty = false;
    st_.last_light_cycle = st_.cycle;
  }

  std::vector<std::deque<ReceivedBlock>> fibre;
  std::deque<std::pair<uint64_t, int>> pd_queue;  // (cycle due, port)
  bool last_irq = false;
  double settle_until_ns = 0;
  // ServerConfig::profile: time spent per component.
  bool profiling = false;
  ServerProfile prof;
};

std::unique_ptr<ServerSim::Impl> make_reference_engine(ServerState& st) {
  if (st.cfg.trace_capable) return std::make_unique<ReferenceEngine<Vmxtb_board_trace, Vlink_endpoint_trace, true>>(st);
  return std::make_unique<ReferenceEngine<ReferenceController, ReferenceEndpoint, false>>(st);
}

// One clock of the whole server, every step in the order the board takes it.
// Long: the emulator's clock as first written, the thing the fast engine is compared against; split,
// it would no longer read as the one clock it is.
template <class Ctl, class Ep, bool kTrace>
void ReferenceEngine<Ctl, Ep, kTrace>::one_cycle() {
  auto& m = m_;
  ServerState& st = st_;
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
  auto& transitions_ = st.transitions;
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
  if (st.fibres.any() && st.fibres.light_inputs(*mesh_, cycle_)) light_dirty_ = true;
  bool moving = now < settle_until_ns + st.period_ns() * cfg_.mesh_update_cycles;
  if (light_dirty_ || (moving && cycle_ - st.last_light_cycle >= cfg_.mesh_update_cycles)) refresh_light();
  lap.stop();

  // Light through the mesh, then down the fibre to each receiver.
  lap.start(profiling ? &prof.stage_s : nullptr);
  for (int o = 0; o < n_links; ++o) {
    const OutputReading& r = light_.outputs[static_cast<size_t>(st.rx_source[static_cast<size_t>(o)])];
    Raw66 word{};
    if (r.dominant_input >= 0 && r.dominant_input < n_links) word = lane_out(*m.ep[static_cast<size_t>(r.dominant_input)]);
    else if (r.dominant_input >= n_links) word = st.fibres.word_in(r.dominant_input, cycle_);
    auto& line = fibre[static_cast<size_t>(o)];
    ReceivedBlock rx = receive_block(r.verdict, word, rng_);
    auto& fault = m.faults[static_cast<size_t>(o)];
    if (cycle_ < fault.dark_until_cycle) rx = ReceivedBlock{Raw66{}, false};
    else if (rx.signal_detect) rx.raw = fault.errors.apply(rx.raw);
    line.push_back(rx);
    lane_in(*m.ep[static_cast<size_t>(o)], line.front());
    line.pop_front();
  }
  if (st.fibres.any())
    st.fibres.record_outputs(light_, cycle_, [&](int input) {
      return input < n_links ? lane_out(*m.ep[static_cast<size_t>(input)]) : st.fibres.word_in(input, cycle_);
    });

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
  for (int i = 0; i < n_links; ++i) m.drive_xpu(st, i, *m.ep[static_cast<size_t>(i)], cycle_);

  lap.stop();

  // The mesh side of the controller: DAC writes and photodiode reads.
  lap.start(profiling ? &prof.mesh_s : nullptr);
  if (m.ctl->dac_valid_o) {
    mesh_->write_dac(m.ctl->dac_elem_o, m.ctl->dac_code_o, now);
    ++dac_writes_;
    light_dirty_ = true;
    settle_until_ns = std::max(settle_until_ns, mesh_->settled_at_ns(kSettleToleranceRad));
  }
  if (m.ctl->pd_req_o) pd_queue.push_back({cycle_ + cfg_.pd_latency_cycles, m.ctl->pd_port_o});
  m.ctl->pd_valid_i = 0;
  if (!pd_queue.empty() && pd_queue.front().first <= cycle_) {
    m.ctl->pd_valid_i = 1;
    m.ctl->pd_dbm_i = static_cast<uint16_t>(mesh_->monitor_code(pd_queue.front().second, now));
    pd_queue.pop_front();
    ++pd_reads_;
  }

  lap.stop();
  bool board_event;
  {
    Stopwatch t(profiling ? &prof.controller_s : nullptr);
    board_event = drive_board_ports(*m.ctl, m.bus, m.port, &st.emu_responder);
  }

  clock_all(cycle_);
  ++cycle_;
  check_assertions(m.ctx, cycle_);
  if (board_event) st.stops.board_event = true;

  if (auto r = m.bus.sample()) {
    bus_result_ = r;
    st.stops.bus_done = true;
  }
  bool irq_now = m.ctl->irq_o;
  if (irq_now && !last_irq) st.stops.irq_rose = true;
  last_irq = irq_now;

  for (int i = 0; i < n_links; ++i) {
    LinkTransition tr;
    if (!m.take_transition(i, *m.ep[static_cast<size_t>(i)], cycle_, tr)) continue;
    transitions_.push_back(tr);
    st.stops.link_changed = true;
  }
}

}  // namespace mxtb::sim
