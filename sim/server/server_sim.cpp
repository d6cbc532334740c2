// ServerSim and its reference engine: the emulated server as first written (server_engine.h).
#include "sim/server/server_sim.h"
#include "sim/common/rtl_assert.h"

#include "sim/server/engine.h"

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

std::vector<int> server_partition_bounds(int links, int threads) {
  if (links < 1 || threads < 1 || threads > links)
    throw std::invalid_argument(fmt::format("server: {} threads cannot share {} links", threads, links));
  std::vector<int> bounds{0};
  const double share = (links + kCoordinatorLinks) / threads;
  int first = threads == 1 ? links : std::clamp(static_cast<int>(share - kCoordinatorLinks + 0.5), 0, links);
  bounds.push_back(first);
  for (int p = 1; p < threads; ++p) {
    int rest = links - bounds.back();
    int left = threads - p;
    bounds.push_back(bounds.back() + (rest + left - 1) / left);
  }
  return bounds;
}

const char* to_string(ServerEngine e) {
  switch (e) {
    case ServerEngine::Reference: return "reference";
    case ServerEngine::Fast: return "fast";
  }
  return "?";
}

std::optional<ServerEngine> server_engine_from_string(const std::string& name) {
  for (ServerEngine e : {ServerEngine::Reference, ServerEngine::Fast})
    if (name == to_string(e)) return e;
  return std::nullopt;
}

// The reference engine: the RTL models (plain or built with FST tracing), the XPUs, the fibres,
// the photodiode queue; per clock, every port rewired and every model evaluated at both edges.
template <class Ctl, class Ep, bool kTrace>
class ReferenceEngine final : public ServerSim::Impl {
 public:
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

  explicit ReferenceEngine(ServerSim& s) : profiling(s.config().profile) { build(s); }
  ReferenceEngine(const ReferenceEngine&) = delete;
  ReferenceEngine& operator=(const ReferenceEngine&) = delete;
  void build(ServerSim& s);
  void one_cycle(ServerSim& s);
  uint64_t run(ServerSim& s, uint64_t max_cycles) override {
    Timer t(profiling ? &prof.step_s : nullptr);
    uint64_t n = 0;
    while (n < max_cycles) {
      one_cycle(s);
      ++n;
      if (s.irq_rose_ || s.bus_done_ || s.link_changed_ || s.program_event_ || s.board_event_) break;
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
};

std::string unsupported_shape(const protocol::ServerShape& s) {
  // The controller models there are (rtl/CMakeLists.txt): 20 links (every engine) and 32 links
  // (the fast engine without waveforms), both on the 32-port mesh.
  const int links = s.links();
  if (s.mesh_ports == 32 && (links == 20 || links == 32)) return "";
  return fmt::format("{} XPUs x {} lanes on a {}-port mesh: the verilated controller is built for 20 or 32 links on 32 ports",
                     s.xpus, s.lanes_per_xpu, s.mesh_ports);
}

ServerSim::ServerSim(const ServerConfig& cfg) : cfg_(cfg), rng_(cfg.seed ^ 0x5E5E) {
  const auto& s = cfg_.shape;
  int n_links = s.xpus * s.lanes_per_xpu;
  n_links_ = n_links;
  program_lane_.assign(static_cast<size_t>(n_links), 0);
  if (cfg_.mesh.ports != s.mesh_ports)
    throw std::invalid_argument(fmt::format("server: mesh has {} ports, shape says {}", cfg_.mesh.ports, s.mesh_ports));
  if (n_links > s.mesh_ports)
    throw std::invalid_argument(fmt::format("server: {} XPU lanes do not fit a {}-port mesh", n_links, s.mesh_ports));
  if (cfg_.fibre_latency_cycles < 1) throw std::invalid_argument("server: fibre_latency_cycles must be >= 1");
  mesh_ = std::make_unique<PhotonicMesh>(cfg_.mesh);
  for (int p = 0; p < s.mesh_ports; ++p) mesh_->set_input_lit(p, false);
  alive_.assign(static_cast<size_t>(s.xpus), true);
  for (int i = 0; i < n_links; ++i) rx_source_.push_back(i);

  if (std::string why = unsupported_shape(s); !why.empty()) throw std::invalid_argument("server: " + why);
  const bool wide = n_links == 32;
  if (wide && (cfg_.engine != ServerEngine::Fast || cfg_.trace_capable))
    throw std::invalid_argument("server: the 32-link controller runs on the fast engine, without waveforms");
  if (cfg_.threads < 1 || cfg_.threads > 64)
    throw std::invalid_argument(fmt::format("server: threads must be in [1, 64], got {}", cfg_.threads));
  if (cfg_.engine == ServerEngine::Reference && cfg_.threads != 1)
    throw std::invalid_argument("server: the reference engine runs on one thread");
  if (cfg_.engine == ServerEngine::Fast) impl_ = make_fast_engine(*this);
  else impl_ = make_reference_engine(*this);
}

std::unique_ptr<ServerSim::Impl> make_reference_engine(ServerSim& s) {
  if (s.config().trace_capable)
    return std::make_unique<ReferenceEngine<Vmxtb_board_trace, Vlink_endpoint_trace, true>>(s);
  return std::make_unique<ReferenceEngine<ReferenceController, ReferenceEndpoint, false>>(s);
}

template <class Ctl, class Ep, bool kTrace>
void ReferenceEngine<Ctl, Ep, kTrace>::build(ServerSim& sim) {
  const ServerConfig& cfg = sim.cfg_;
  const auto& s = cfg.shape;
  const int n_links = sim.n_links_;
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

ServerSim::~ServerSim() { impl_->finish(); }

void ServerSim::start_waveform(const std::string& path) { impl_->start_waveform(path); }
void ServerSim::stop_waveform() { impl_->stop_waveform(); }
bool ServerSim::waveform_on() const { return impl_->waveform_on(); }

void ServerSim::start_read(uint32_t addr) {
  if (impl_->bus_busy()) throw std::logic_error("server: bus transaction already in flight");
  impl_->start_read(addr);
}

void ServerSim::start_write(uint32_t addr, uint32_t data) {
  if (impl_->bus_busy()) throw std::logic_error("server: bus transaction already in flight");
  impl_->start_write(addr, data);
}

bool ServerSim::bus_busy() const { return impl_->bus_busy() || bus_result_.has_value(); }

std::optional<AxilResult> ServerSim::take_bus_result() {
  auto r = bus_result_;
  bus_result_.reset();
  return r;
}

bool ServerSim::irq() const { return impl_->irq(); }

void ServerSim::kill_xpu(int xpu) {
  if (xpu < 0 || xpu >= cfg_.shape.xpus) throw std::invalid_argument(fmt::format("no XPU {}", xpu));
  alive_[static_cast<size_t>(xpu)] = false;
  for (int l = 0; l < cfg_.shape.lanes_per_xpu; ++l) impl_->source(xpu * cfg_.shape.lanes_per_xpu + l).stop();
}

void ServerSim::set_lane_program(LaneProgram* p) {
  if (p && cfg_.engine == ServerEngine::Fast && cfg_.threads > 1)
    throw std::invalid_argument(fmt::format("XPU programs run on one thread, not {}: an XPU's lanes share its memory", cfg_.threads));
  program_ = p;
  for (int i = 0; i < n_links_; ++i) program_lane_[static_cast<size_t>(i)] = p && p->owns(i);
  if (p) p->attach(*this);
}

void ServerSim::set_lane_ber(int link, double ber) {
  if (link < 0 || link >= n_links_) throw std::invalid_argument(fmt::format("no link {}", link));
  impl_->lane_fault(link).errors.set_ber(ber);
}

void ServerSim::swap_lanes(int a, int b) {
  if (a < 0 || a >= n_links_ || b < 0 || b >= n_links_) throw std::invalid_argument(fmt::format("no link {} or {}", a, b));
  std::swap(rx_source_[static_cast<size_t>(a)], rx_source_[static_cast<size_t>(b)]);
}

void ServerSim::dark_lane(int link, uint64_t cycles) {
  if (link < 0 || link >= n_links_) throw std::invalid_argument(fmt::format("no link {}", link));
  auto& f = impl_->lane_fault(link);
  f.dark_until_cycle = std::max(f.dark_until_cycle, cycle_ + cycles);
}

void ServerSim::start_datagram(std::vector<uint8_t> datagram) {
  if (datagram_busy()) throw std::logic_error("server: a datagram is already in flight");
  impl_->board_port().start(std::move(datagram));
}

bool ServerSim::datagram_busy() const {
  const BoardPort& p = impl_->board_port();
  return p.busy() || p.outcome_ready();
}

std::optional<DatagramOutcome> ServerSim::take_datagram_outcome() { return impl_->board_port().take_outcome(); }

const std::optional<EmuAccess>& ServerSim::emulator_access() const { return impl_->board_port().emulator_access(); }

void ServerSim::answer_emulator(bool ok, uint32_t read_data) { impl_->board_port().answer_emulator(ok, read_data); }

const BoardPort& ServerSim::board_port() const { return impl_->board_port(); }

uint64_t ServerSim::step(uint64_t max_cycles) {
  irq_rose_ = bus_done_ = link_changed_ = program_event_ = board_event_ = false;
  if (program_) {
    const uint64_t wake = program_->wake_cycle();
    if (wake > cycle_ && wake - cycle_ < max_cycles) max_cycles = wake - cycle_;
  }
  const uint64_t ran = max_cycles ? impl_->run(*this, max_cycles) : 0;
  if (program_) program_->after_step(*this);
  return ran;
}

ServerProfile ServerSim::profile() const { return impl_->profile(); }

ServerProfile ServerProfile::operator-(const ServerProfile& o) const {
  ServerProfile d;
  d.cycles = cycles - o.cycles;
  d.step_s = step_s - o.step_s;
  d.links_s = links_s - o.links_s;
  d.controller_s = controller_s - o.controller_s;
  d.mesh_s = mesh_s - o.mesh_s;
  d.xpu_s = xpu_s - o.xpu_s;
  d.wait_s = wait_s - o.wait_s;
  d.stage_s = stage_s - o.stage_s;
  d.checkpoint_s = checkpoint_s - o.checkpoint_s;
  d.checkpoint_link_min_s = checkpoint_link_min_s;  // a minimum over the run, not a sum
  d.windows = windows - o.windows;
  d.rollbacks = rollbacks - o.rollbacks;
  return d;
}

void ServerSim::refresh_light() {
  light_ = mesh_->propagate(now_ns());
  light_dirty_ = false;
  last_light_cycle_ = cycle_;
}

template <class Ctl, class Ep, bool kTrace>
void ReferenceEngine<Ctl, Ep, kTrace>::one_cycle(ServerSim& sim) {
  auto& m = *this;
  const ServerConfig& cfg_ = sim.cfg_;
  auto& mesh_ = sim.mesh_;
  auto& alive_ = sim.alive_;
  auto& cycle_ = sim.cycle_;
  auto& light_ = sim.light_;
  auto& light_dirty_ = sim.light_dirty_;
  auto& rng_ = sim.rng_;
  auto& dac_writes_ = sim.dac_writes_;
  auto& pd_reads_ = sim.pd_reads_;
  auto& bus_result_ = sim.bus_result_;
  auto& bus_done_ = sim.bus_done_;
  auto& irq_rose_ = sim.irq_rose_;
  auto& transitions_ = sim.transitions_;
  auto& link_changed_ = sim.link_changed_;
  const int lanes = cfg_.shape.lanes_per_xpu;
  const int n_links = sim.links();
  const double now = sim.now_ns();

  Lap lap;
  lap.start(profiling ? &prof.mesh_s : nullptr);
  for (int i = 0; i < n_links; ++i) {
    bool lit = alive_[static_cast<size_t>(i / lanes)] && m.ep[static_cast<size_t>(i)]->laser_o;
    if (mesh_->input_lit(i) != lit) {
      mesh_->set_input_lit(i, lit);
      light_dirty_ = true;
    }
  }
  bool moving = now < m.settle_until_ns + sim.period_ns() * cfg_.mesh_update_cycles;
  if (light_dirty_ || (moving && cycle_ - sim.last_light_cycle_ >= cfg_.mesh_update_cycles)) sim.refresh_light();
  lap.stop();

  // Light through the mesh, then down the fibre to each receiver.
  lap.start(profiling ? &prof.stage_s : nullptr);
  for (int o = 0; o < n_links; ++o) {
    const OutputReading& r = light_.outputs[static_cast<size_t>(sim.rx_source_[static_cast<size_t>(o)])];
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
    if (drive_program_lane(sim, e, i, cycle_)) continue;
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
    board_event = drive_board_ports(*m.ctl, m.bus, m.port, &sim.emu_responder_);
  }

  m.clock_all(cycle_);
  ++cycle_;
  check_assertions(m.ctx, cycle_);
  if (board_event) sim.board_event_ = true;

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

LinkReport ServerSim::link_report(int i) const {
  auto e = impl_->link_view(i);
  const auto& src = impl_->source(i);
  const auto& sb = impl_->board(i);
  return LinkReport{e.state, e.reason, e.peer, e.frames_tx, e.frames_rx, e.crc_errors, e.replays, e.retrains,
                    src.messages_sent(), sb.messages(), sb.errors(), sb.skipped_words(), sb.resyncs(), sb.first_error()};
}

link::LinkState ServerSim::link_state(int i) const {
  return impl_->link_view(i).state;
}

EndpointIdentity ServerSim::link_peer(int i) const { return impl_->link_view(i).peer; }

uint64_t ServerSim::scoreboard_errors() const {
  uint64_t n = 0;
  for (int i = 0; i < links(); ++i)
    if (alive_[static_cast<size_t>(i / cfg_.shape.lanes_per_xpu)]) n += impl_->board(i).errors();
  return n;
}

uint64_t ServerSim::messages_delivered() const {
  uint64_t n = 0;
  for (int i = 0; i < links(); ++i) n += impl_->board(i).messages();
  return n + (program_ ? program_->messages_delivered() : 0);
}

}  // namespace mxtb::sim
