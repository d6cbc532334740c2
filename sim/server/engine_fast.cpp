// The fast engine of ServerSim (sim/server/engine.h): the reference engine's cycles with less work,
// on one thread or several. docs/performance.md explains each point; in short:
//
// * One evaluation per model per clock. The models are clocked on posedge clk_i only (and
//   negedge rst_ni): the falling edge changes no state, yet Verilator 5.006's eval() re-runs the
//   whole input-combinational region every call. The falling edge is recorded in the model's
//   trigger memory instead of evaluated (fall() below), except while a waveform is dumped.
// * Ports are rewired only when their source changed: the controller's link outputs follow its
//   active map, the links' states change a few times per training.
// * Light paths are kept as a per-output table (dominant input, verdict) rebuilt when the mesh is
//   re-traced; fibres are rings indexed by cycle. The models' outputs after each clock are kept
//   (LinkOut), so that the mesh, the controller and the photodiodes read them as the reference
//   reads the models before the next clock.
//
// Threads. The links are split into partitions, one per thread; thread 0 (the caller of step(),
// the coordinator) also runs the controller, the mesh and the bus. Lane words cross the mesh
// through fibre of `fibre_latency_cycles` (L), so a link's word reaches another link L clocks
// later: partitions can run a window of up to L clocks apart and exchange words at its end.
// The controller and the links also see each other's outputs one clock later (states and
// reasons in, expectations and retrain pulses out, and the lasers the photodiodes see). Those
// signals change rarely, so a window is run speculatively: every partition assumes the
// controller's link outputs stay as they were at the window's start, the controller assumes the
// links' states, reasons and lasers do. Each partition checkpoints its models before a window;
// after it, the coordinator checks the assumptions and the step's stop conditions (a link
// changed state, a bus transaction completed, the interrupt rose). When one broke at clock m
// before the window's last, every partition rolls back and runs [T, m] again, which is exact by
// construction; then a cool-down runs one clock per window, which needs no speculation (nor does
// any window while a bus transaction is in flight: it completes within a few clocks). Results
// are therefore those of the single-threaded run for any number of threads
// (testbench/sim/test_server_engines.cpp checks 1, 2, 4 and 8). The words a window's links send
// are delivered L clocks on; each thread computes its own receivers' at the next window's start,
// except when a garbled output needs the server's one noise generator in the reference's order.
#include "sim/server/engine.h"
#include "sim/server/server_models.h"

#include "Vlink_endpoint.h"
#include "Vlink_endpoint___024root.h"
#include "Vlink_endpoint_trace.h"
#include "Vlink_endpoint_trace___024root.h"
#include "Vmxtb_board.h"
#include "Vmxtb_board___024root.h"
#include "Vmxtb_board_l32.h"
#include "Vmxtb_board_l32___024root.h"
#include "Vmxtb_board_trace.h"
#include "Vmxtb_board_trace___024root.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mxtb::sim {

namespace {

// ---- verilated models ----

template <class M>
using RootOf = std::remove_pointer_t<decltype(std::declval<M&>().rootp)>;

// Verilator 5.006 remembers the clock's last evaluated level in the root's trigger memory.
template <class R, class = void>
struct HasClockTriggerMemory : std::false_type {};
template <class R>
struct HasClockTriggerMemory<R, std::void_t<decltype(std::declval<R&>().__Vtrigrprev__TOP__clk_i)>> : std::true_type {};

template <class M>
void rise(M& m) {
  m.clk_i = 1;
  m.eval();
}

// The falling edge of a model clocked only on posedge clk_i: nothing but the trigger memory
// changes, so it is written instead of evaluated. A Verilator without that memory gets the
// evaluation (and the reference speed).
template <class M>
void fall(M& m) {
  m.clk_i = 0;
  if constexpr (HasClockTriggerMemory<RootOf<M>>::value) m.rootp->__Vtrigrprev__TOP__clk_i = 0;
  else m.eval();
}

// A model's complete state for a rollback. Verilator keeps a design's state in its root module as
// fixed-size members (these designs have no strings, queues or timing), next to pointers to the
// model's own symbol table; copying the bytes back into the same object restores the state and
// leaves those pointers as they were.
template <class M>
class RootCheckpoint {
 public:
  void save(const M& m) { std::memcpy(bytes_, static_cast<const void*>(m.rootp), sizeof(RootOf<M>)); }
  void restore(M& m) const { std::memcpy(static_cast<void*>(m.rootp), bytes_, sizeof(RootOf<M>)); }

 private:
  alignas(RootOf<M>) unsigned char bytes_[sizeof(RootOf<M>)];
};

template <class W>
void set_nibble(W& w, int index, uint32_t value) {
  const int bit = 4 * index;  // a nibble never straddles a 32-bit word
  const uint32_t mask = 0xFu << (bit % 32);
  w[bit / 32] = (w[bit / 32] & ~mask) | ((value << (bit % 32)) & mask);
}

// A port's value as 32-bit words (Verilator's IData, QData or VlWide).
inline void append_words(std::vector<uint32_t>& out, uint32_t v) { out.push_back(v); }
inline void append_words(std::vector<uint32_t>& out, uint64_t v) {
  out.push_back(static_cast<uint32_t>(v));
  out.push_back(static_cast<uint32_t>(v >> 32));
}
template <std::size_t N>
void append_words(std::vector<uint32_t>& out, const VlWide<N>& v) {
  for (std::size_t i = 0; i < N; ++i) out.push_back(v[i]);
}

// ---- waiting ----

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Spins until `ready()` for up to kSpinMicros, which covers the gap between windows when every
// thread has a core of its own; false when it is still not ready (the caller then sleeps: on a
// machine with fewer free cores than threads, spinning would only keep the awaited thread off one).
constexpr double kSpinMicros = 50;
template <class F>
bool spin_for(F ready) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if (i % 64 == 0 && seconds_since(t0) * 1e6 > kSpinMicros) return ready();
  }
}

// ---- the crew: worker threads that each run one partition's share of a window ----

class Crew {
 public:
  Crew(int workers, std::function<void(int)> work) : work_(std::move(work)), done_(static_cast<size_t>(workers)) {
    for (int w = 0; w < workers; ++w) threads_.emplace_back([this, w] { loop(w); });
  }
  ~Crew() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      gen_.fetch_add(1);
    }
    job_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  Crew(const Crew&) = delete;
  Crew& operator=(const Crew&) = delete;

  // Hands every worker the job now described (the caller's data); returns at once.
  void start() {
    gen_.fetch_add(1);
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      job_cv_.notify_all();
    }
  }
  // Returns when every worker finished the job start() handed out.
  void wait() {
    const uint64_t g = gen_.load();
    auto all_done = [&] {
      for (auto& d : done_)
        if (d.gen.load() != g) return false;  // seq_cst, as the store: see waiting_
      return true;
    };
    if (spin_for(all_done)) return;
    std::unique_lock<std::mutex> lock(mu_);
    waiting_.store(true);
    done_cv_.wait(lock, all_done);
    waiting_.store(false);
  }

 private:
  struct alignas(64) Done {
    std::atomic<uint64_t> gen{0};
  };
  void loop(int w) {
    uint64_t seen = 0;
    for (;;) {
      if (!spin_for([&] { return gen_.load() != seen; })) {
        std::unique_lock<std::mutex> lock(mu_);
        sleepers_.fetch_add(1);
        job_cv_.wait(lock, [&] { return gen_.load() != seen; });
        sleepers_.fetch_sub(1);
      }
      const uint64_t g = gen_.load();
      if (stop_) return;
      seen = g;
      work_(w);
      done_[static_cast<size_t>(w)].gen.store(g);
      if (waiting_.load()) {
        std::lock_guard<std::mutex> lock(mu_);
        done_cv_.notify_one();
      }
    }
  }

  std::function<void(int)> work_;
  std::vector<Done> done_;
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> gen_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> waiting_{false};
  std::mutex mu_;
  std::condition_variable job_cv_, done_cv_;
  bool stop_ = false;
};

uint32_t next_pow2(uint32_t x) {
  uint32_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

constexpr uint32_t kMaxWindow = 8;       // clocks per speculative window, at most the fibre latency
constexpr uint64_t kCoolDownCycles = 64;  // one-clock windows after a rollback

}  // namespace

template <class Ctl, class Ep, bool kTrace>
class FastEngine final : public ModelEngine<Ctl, Ep, kTrace> {
  using Base = ModelEngine<Ctl, Ep, kTrace>;

 public:
  explicit FastEngine(ServerState& st);
  ~FastEngine() override = default;
  FastEngine(const FastEngine&) = delete;
  FastEngine& operator=(const FastEngine&) = delete;

  uint64_t run(uint64_t max_cycles) override;
  void finish() override;
  ServerProfile profile() const override;

 private:
  // What a link's models show after a clock: what the mesh, the controller and the photodiodes read.
  struct LinkOut {
    uint64_t lo = 0;
    uint8_t hi = 0, laser = 0, state = 0, reason = 0;
  };
  // The controller's outputs towards one link.
  struct LinkControl {
    uint8_t check = 0, retrain = 0, expect_lane = 0;
    uint16_t expect_xpu = 0;
  };
  // One mesh output as traced: the input it carries and whether a receiver can read it.
  struct Route {
    int dominant = -1;
    Verdict verdict = Verdict::Dark;
  };
  struct LinkCheckpoint {
    RootCheckpoint<Ep> root;
    TrafficSource::Checkpoint source;
    Scoreboard::Checkpoint scoreboard;
    uint64_t board_stream = UINT64_MAX;
    link::LinkState last_state = link::LinkState::Reset;
    uint64_t control_applied = 0;
  };
  // One thread's share of the links, and what its last window found.
  struct alignas(64) Partition {
    int first = 0, end = 0;
    uint64_t first_change = UINT64_MAX;  // the first clock whose evaluation changed a link's state, reason or laser
    std::vector<LinkTransition> transitions;
    double links_s = 0, stage_s = 0, checkpoint_s = 0;  // profiling: all of its windows, and parts of that
    double checkpoint_link_min_s = 1e9;                    // profiling: the fastest window's checkpoint, per link
  };
  // What the coordinator must restore when a window rolls back.
  struct CoordinatorCheckpoint {
    RootCheckpoint<Ctl> ctl;
    AxilMaster<Ctl> bus;
    BoardPort port;
    std::deque<std::pair<uint64_t, int>> pd_queue;
    double settle_until_ns = 0;
    uint64_t dac_writes = 0, pd_reads = 0;
    bool last_irq = false;
    std::vector<uint8_t> ctl_state_in, ctl_reason_in;
    std::vector<bool> lit;
    bool light_dirty = false;
    uint64_t last_light_cycle = 0;
    // Saved before the window's first DAC write and first re-trace, which most windows have not.
    bool mesh_saved = false, light_saved = false;
    PhotonicMesh::State mesh;
    Propagation light;
    std::vector<Route> routes;
  };
  // What the controller did during a window, applied when the window commits.
  struct ControllerEvents {
    uint64_t first_change = UINT64_MAX;  // first clock after which its link outputs differed from the window's start
    uint64_t stop = UINT64_MAX;          // first clock a bus transaction completed, the interrupt rose or the board port wanted the emulator
    bool control_changed = false;
    std::optional<AxilResult> bus_result;
    bool irq_rose = false;
    bool board_event = false;
  };

  // The server reaches `cycle`: the models' assertions are checked, and what the controller did on
  // the way becomes the step's result and stop conditions (one clock, or a window's prefix).
  void commit_clock(uint64_t cycle, const ControllerEvents& ev) {
    st_.cycle = cycle;
    check_assertions(m_.ctx, st_.cycle);
    if (ev.bus_result) {
      st_.bus_result = ev.bus_result;
      st_.stops.bus_done = true;
    }
    if (ev.irq_rose) st_.stops.irq_rose = true;
    if (ev.board_event) st_.stops.board_event = true;
  }

  LinkOut& out(uint64_t cycle, int link) { return out_[(cycle & out_mask_) * static_cast<size_t>(n_) + static_cast<size_t>(link)]; }
  ReceivedBlock& fibre(int link, uint64_t cycle) {
    return fibre_[static_cast<size_t>(link) * fibre_slots_ + (cycle & (fibre_slots_ - 1))];
  }
  double now_at(uint64_t cycle) const { return static_cast<double>(cycle) * st_.period_ns(); }

  void record_out(int i, uint64_t cycle);
  void read_control();          // the controller's link outputs, raw, into control_now_
  bool control_differs() const { return control_now_ != control_raw_; }
  void apply_control();         // the links see control_now_ from their next clock
  // Per-clock parts.
  void mesh_lights(uint64_t t, bool lasers_changed_maybe);
  void mesh_words(uint64_t t, const std::vector<Route>& routes, int first, int end);
  void controller_inputs(uint64_t t);
  void link_inputs(int i, uint64_t t);
  void link_eval(int i, uint64_t t, Partition* part);
  void links_cycle(int first, int end, uint64_t t, Partition* part);
  void controller_cycle(uint64_t t, ControllerEvents& ev);
  void cycle_single();
  uint64_t run_window(uint64_t T, uint32_t W);
  void partition_run(Partition& p, uint64_t T, uint32_t W, bool speculative);
  void coordinator_run(uint64_t T, uint32_t W, bool speculative, ControllerEvents& ev);
  void save_coordinator();
  void restore_coordinator();
  void save_links(const Partition& p);
  void restore_links(const Partition& p);
  void rebuild_routes();
  void worker(int w);

  using Base::m_;   // the models (sim/server/server_models.h)
  using Base::st_;  // the state shared with ServerSim (sim/server/server_state.h)
  const ServerConfig& cfg_;
  const int n_, lanes_;
  const uint32_t latency_;
  size_t fibre_slots_ = 0;
  std::vector<ReceivedBlock> fibre_;
  uint64_t out_mask_ = 0;
  std::vector<LinkOut> out_;
  // The controller's outputs towards the links: decoded as the links see them, the raw words
  // they came from, and the raw words after the controller's last clock.
  std::vector<LinkControl> control_;
  std::vector<uint32_t> control_raw_, control_now_;
  uint64_t control_gen_ = 1;
  std::vector<uint64_t> control_applied_;
  std::vector<uint8_t> ctl_state_in_, ctl_reason_in_;  // what the controller's link inputs hold
  std::vector<bool> lit_;                               // what the mesh's inputs hold
  std::vector<Route> routes_;                           // per mesh output, from the last trace
  Propagation pd_light_;                                // scratch for photodiode reads
  std::deque<std::pair<uint64_t, int>> pd_queue_;       // (cycle due, port)
  double settle_until_ns_ = 0;
  bool last_irq_ = false;
  // Threads.
  std::vector<Partition> parts_;
  std::vector<LinkCheckpoint> link_saves_;
  CoordinatorCheckpoint coord_save_;
  // Route tables during a window: the one in force at its start, and each re-trace's from its clock.
  struct RouteLog {
    std::vector<Route> at_start;
    std::vector<std::pair<uint64_t, std::vector<Route>>> changes;
    size_t used = 0;
    bool garbled() const;  // some output garbled: its noise comes from the server's one generator, in order
  };
  RouteLog route_log_;
  // A committed window whose words each partition computes for its own receivers when the next
  // window starts (they are due L clocks on), unless it needs the noise generator.
  struct Stage {
    bool pending = false;
    uint64_t T = 0, E = 0;
    RouteLog routes;
  } stage_;
  void run_stage(const Stage& st, int first, int end);
  void flush_stage();
  bool in_window_ = false, speculating_ = false;
  uint64_t calm_from_ = 0;  // no speculation before this clock
  struct Job {
    enum class Kind { Run, Restore } kind = Kind::Run;
    uint64_t T = 0;
    uint32_t W = 1;
    bool speculative = false;
    bool stage = false;  // first the pending stage for the partition's receivers
  } job_;
  std::unique_ptr<Crew> crew_;
  uint32_t max_window_ = 1;
  ServerProfile prof_;
  bool profiling_ = false;
};

template <class Ctl, class Ep, bool kTrace>
FastEngine<Ctl, Ep, kTrace>::FastEngine(ServerState& st)
    : Base(st),
      cfg_(st.cfg),
      n_(st.n_links),
      lanes_(st.cfg.shape.lanes_per_xpu),
      latency_(st.cfg.fibre_latency_cycles),
      profiling_(st.cfg.profile) {
  const ServerConfig& cfg = cfg_;
  const int threads = kTrace ? 1 : std::min(cfg.threads, n_);
  max_window_ = threads > 1 ? std::min<uint32_t>(kMaxWindow, latency_) : 1;
  fibre_slots_ = next_pow2(latency_ + max_window_ + 1);
  fibre_.assign(static_cast<size_t>(n_) * fibre_slots_, ReceivedBlock{});
  // Outputs from the clock before a window to its end, and the window before it, whose words the
  // partitions compute while this one runs.
  out_mask_ = next_pow2(2 * max_window_ + 2) - 1;
  out_.assign((out_mask_ + 1) * static_cast<size_t>(n_), LinkOut{});
  control_.assign(static_cast<size_t>(n_), LinkControl{});
  control_applied_.assign(static_cast<size_t>(n_), 0);
  ctl_state_in_.assign(static_cast<size_t>(n_), 0xFF);
  ctl_reason_in_.assign(static_cast<size_t>(n_), 0xFF);
  lit_.assign(static_cast<size_t>(cfg.shape.mesh_ports), false);
  routes_.assign(static_cast<size_t>(cfg.shape.mesh_ports), Route{});

  m_.reset([this] { m_.clock_both_edges(); });  // the reference's reset, both edges evaluated
  for (int i = 0; i < n_; ++i) record_out(i, UINT64_MAX);  // "after clock -1": what clock 0 reads
  read_control();
  apply_control();

  auto bounds = server_partition_bounds(n_, threads);
  for (int p = 0; p < threads; ++p) {
    parts_.emplace_back();
    parts_.back().first = bounds[static_cast<size_t>(p)];
    parts_.back().end = bounds[static_cast<size_t>(p) + 1];
  }
  if (threads > 1) {
    link_saves_.resize(static_cast<size_t>(n_));
    route_log_.changes.resize(max_window_ + 1);
    stage_.routes.changes.resize(max_window_ + 1);
    crew_ = std::make_unique<Crew>(threads - 1, [this](int w) { worker(w); });
  }
}

template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::record_out(int i, uint64_t cycle) {
  const Ep& e = *m_.ep[static_cast<size_t>(i)];
  LinkOut& o = out(cycle, i);
  o.lo = uint64_t{e.lane_tx_o[0]} | (uint64_t{e.lane_tx_o[1]} << 32);
  o.hi = static_cast<uint8_t>(e.lane_tx_o[2] & 3u);
  o.laser = e.laser_o;
  o.state = e.state_o;
  o.reason = e.reason_o;
}

template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::read_control() {
  const Ctl& c = *m_.ctl;
  control_now_.clear();
  append_words(control_now_, c.link_check_o);
  append_words(control_now_, c.link_retrain_o);
  append_words(control_now_, c.link_expect_xpu_o);
  append_words(control_now_, c.link_expect_lane_o);
}

template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::apply_control() {
  control_raw_ = control_now_;
  const Ctl& c = *m_.ctl;
  for (int i = 0; i < n_; ++i) {
    LinkControl& k = control_[static_cast<size_t>(i)];
    k.check = static_cast<uint8_t>((c.link_check_o >> i) & 1u);
    k.retrain = static_cast<uint8_t>((c.link_retrain_o >> i) & 1u);
    k.expect_xpu = static_cast<uint16_t>(get_bits(c.link_expect_xpu_o, 8 * i, 8));
    k.expect_lane = static_cast<uint8_t>(get_bits(c.link_expect_lane_o, 8 * i, 8));
  }
  ++control_gen_;
}

template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::rebuild_routes() {
  for (size_t o = 0; o < routes_.size(); ++o) {
    routes_[o].dominant = st_.light.outputs[o].dominant_input;
    routes_[o].verdict = st_.light.outputs[o].verdict;
  }
}

// The reference's first step of a clock: lasers of living XPUs light the mesh's inputs (read only
// when they may have changed since); light is re-traced when an input or a DAC changed, and every
// mesh_update_cycles while elements move.
template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::mesh_lights(uint64_t t, bool lasers_changed_maybe) {
  if (lasers_changed_maybe) {
    for (int i = 0; i < n_; ++i) {
      bool lit = st_.alive[static_cast<size_t>(i / lanes_)] && out(t - 1, i).laser;
      if (lit_[static_cast<size_t>(i)] != lit) {
        lit_[static_cast<size_t>(i)] = lit;
        st_.mesh->set_input_lit(i, lit);
        st_.light_dirty = true;
      }
    }
  }
  if (st_.fibres.any() && st_.fibres.light_inputs(*st_.mesh, t)) st_.light_dirty = true;  // one thread only (ServerSim)
  const double now = now_at(t);
  bool moving = now < settle_until_ns_ + st_.period_ns() * cfg_.mesh_update_cycles;
  if (st_.light_dirty || (moving && t - st_.last_light_cycle >= cfg_.mesh_update_cycles)) {
    if (speculating_ && !coord_save_.light_saved) {
      coord_save_.light = st_.light;
      coord_save_.routes = routes_;
      coord_save_.light_saved = true;
    }
    st_.mesh->propagate_into(now, st_.light);
    st_.light_dirty = false;
    st_.last_light_cycle = t;
    rebuild_routes();
    if (in_window_) {
      auto& entry = route_log_.changes[route_log_.used++];
      entry.first = t;
      entry.second = routes_;
    }
  }
}

// Each receiver's word for clock t + L: what the mesh output it faces carries at clock t (the
// dominant input's word from the clock before, noise, or darkness), through its faults.
template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::mesh_words(uint64_t t, const std::vector<Route>& routes, int first, int end) {
  for (int o = first; o < end; ++o) {
    const Route& r = routes[static_cast<size_t>(st_.rx_source[static_cast<size_t>(o)])];
    ReceivedBlock rx;
    switch (r.verdict) {
      case Verdict::Lit:
        rx.signal_detect = true;
        if (r.dominant >= 0 && r.dominant < n_) {
          const LinkOut& w = out(t - 1, r.dominant);
          rx.raw = Raw66{w.lo, w.hi};
        } else if (r.dominant >= n_) {
          rx.raw = st_.fibres.word_in(r.dominant, t);
        }
        break;
      case Verdict::Garbled: rx = receive_block(Verdict::Garbled, Raw66{}, st_.rng); break;
      case Verdict::Dark: break;
    }
    LaneFault& f = m_.faults[static_cast<size_t>(o)];
    if (t < f.dark_until_cycle) rx = ReceivedBlock{Raw66{}, false};
    else if (rx.signal_detect) rx.raw = f.errors.apply(rx.raw);
    fibre(o, t + latency_) = rx;
  }
}

// The controller's link inputs: each link's state and reason after the previous clock.
template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::controller_inputs(uint64_t t) {
  for (int i = 0; i < n_; ++i) {
    const LinkOut& o = out(t - 1, i);
    if (o.state != ctl_state_in_[static_cast<size_t>(i)]) {
      set_nibble(m_.ctl->link_state_i, i, o.state);
      ctl_state_in_[static_cast<size_t>(i)] = o.state;
    }
    if (o.reason != ctl_reason_in_[static_cast<size_t>(i)]) {
      set_nibble(m_.ctl->link_reason_i, i, o.reason);
      ctl_reason_in_[static_cast<size_t>(i)] = o.reason;
    }
  }
}

// Link i's inputs for clock t: its receiver's word, the controller's expectations (when they
// changed), and the XPU behind it, which reads the link's outputs from the clock before.
template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::link_inputs(int i, uint64_t t) {
  const size_t k = static_cast<size_t>(i);
  Ep& e = *m_.ep[k];
  const ReceivedBlock& rx = fibre(i, t);
  e.lane_rx_i[0] = static_cast<uint32_t>(rx.raw.lo);
  e.lane_rx_i[1] = static_cast<uint32_t>(rx.raw.lo >> 32);
  e.lane_rx_i[2] = rx.raw.hi;
  e.lane_sd_i = rx.signal_detect;
  if (control_applied_[k] != control_gen_) {
    const LinkControl& c = control_[k];
    e.check_peer_i = c.check;
    e.retrain_req_i = c.retrain;
    e.expect_xpu_i = c.expect_xpu;
    e.expect_lane_i = c.expect_lane;
    control_applied_[k] = control_gen_;
  }
  m_.drive_xpu(st_, i, e, t);
}

// Link i's clock, then what it shows. `part`: the partition collecting transitions in a window;
// null on the single-threaded path (straight into the server's list).
template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::link_eval(int i, uint64_t t, Partition* part) {
  const size_t k = static_cast<size_t>(i);
  Ep& e = *m_.ep[k];
  rise(e);
  if (!m_.dumping) fall(e);
  record_out(i, t);
  LinkTransition tr;
  if (!m_.take_transition(i, e, t + 1, tr)) return;
  if (part) part->transitions.push_back(tr);
  else {
    st_.transitions.push_back(tr);
    st_.stops.link_changed = true;
  }
}

// Clock t of links [first, end). Every link's inputs first, then every evaluation: the XPUs read
// their link's outputs from the clock before, so the order changes nothing and each part can be
// timed as a whole.
template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::links_cycle(int first, int end, uint64_t t, Partition* part) {
  {
    Stopwatch sw(profiling_ && !part ? &prof_.xpu_s : nullptr);
    for (int i = first; i < end; ++i) link_inputs(i, t);
  }
  Stopwatch sw(profiling_ && !part ? &prof_.links_s : nullptr);
  for (int i = first; i < end; ++i) link_eval(i, t, part);
}

// The controller's clock: its mesh port (DAC writes, photodiodes), its bus, its evaluation.
template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::controller_cycle(uint64_t t, ControllerEvents& ev) {
  Ctl& c = *m_.ctl;
  const double now = now_at(t);
  {
    Stopwatch sw(profiling_ ? &prof_.mesh_s : nullptr);
    if (c.dac_valid_o) {
      if (speculating_ && !coord_save_.mesh_saved) {
        st_.mesh->save(coord_save_.mesh);
        coord_save_.mesh_saved = true;
      }
      st_.mesh->write_dac(c.dac_elem_o, c.dac_code_o, now);
      ++st_.dac_writes;
      st_.light_dirty = true;
      settle_until_ns_ = std::max(settle_until_ns_, st_.mesh->settled_at_ns(kSettleToleranceRad));
    }
    if (c.pd_req_o) pd_queue_.push_back({t + cfg_.pd_latency_cycles, c.pd_port_o});
    c.pd_valid_i = 0;
    if (!pd_queue_.empty() && pd_queue_.front().first <= t) {
      c.pd_valid_i = 1;
      st_.mesh->propagate_into(now, pd_light_);
      c.pd_dbm_i = static_cast<uint16_t>(monitor_code_from_dbm(pd_light_.outputs[static_cast<size_t>(pd_queue_.front().second)].total_dbm));
      pd_queue_.pop_front();
      ++st_.pd_reads;
    }
  }
  {
    Stopwatch sw(profiling_ ? &prof_.controller_s : nullptr);
    if (drive_board_ports(c, m_.bus, m_.port, &st_.emu_responder)) {
      ev.board_event = true;
      ev.stop = std::min(ev.stop, t);
    }
    rise(c);
    if (!m_.dumping) fall(c);
  }
  if (auto r = m_.bus.sample()) {
    ev.bus_result = r;
    ev.stop = std::min(ev.stop, t);
  }
  bool irq_now = c.irq_o;
  if (irq_now && !last_irq_) {
    ev.irq_rose = true;
    ev.stop = std::min(ev.stop, t);
  }
  last_irq_ = irq_now;
  read_control();
  if (control_differs()) {
    ev.control_changed = true;
    ev.first_change = std::min(ev.first_change, t);
  } else {
    ev.control_changed = false;
  }
}

template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::cycle_single() {
  const uint64_t t = st_.cycle;
  {
    Stopwatch sw(profiling_ ? &prof_.mesh_s : nullptr);
    mesh_lights(t, true);
  }
  {
    Stopwatch sw(profiling_ ? &prof_.stage_s : nullptr);
    mesh_words(t, routes_, 0, n_);
    if (st_.fibres.any())
      st_.fibres.record_outputs(st_.light, t, [&](int input) {
        if (input >= n_) return st_.fibres.word_in(input, t);
        const LinkOut& w = out(t - 1, input);
        return Raw66{w.lo, w.hi};
      });
  }
  controller_inputs(t);
  links_cycle(0, n_, t, nullptr);
  ControllerEvents ev;
  controller_cycle(t, ev);
  if constexpr (kTrace) {
    if (m_.dumping) {
      m_.fst->dump(t * m_.period_ps);
      fall(*m_.ctl);  // while dumping, falls are evaluated (fall() writes only the trigger memory otherwise)
      m_.ctl->eval();
      for (auto& e : m_.ep) {
        e->clk_i = 0;
        e->eval();
      }
      m_.fst->dump(t * m_.period_ps + m_.period_ps / 2);
    }
  }
  commit_clock(t + 1, ev);
  if (ev.control_changed) apply_control();
}

template <class Ctl, class Ep, bool kTrace>
uint64_t FastEngine<Ctl, Ep, kTrace>::run(uint64_t max_cycles) {
  auto t0 = std::chrono::steady_clock::now();
  uint64_t n = 0;
  if (!crew_ || m_.dumping) {
    while (n < max_cycles) {
      cycle_single();
      ++n;
      if (st_.stops.any()) break;
    }
  } else {
    while (n < max_cycles) {
      const uint64_t T = st_.cycle;
      uint32_t W = 1;
      // Speculate only when calm: no bus transaction in flight (it completes within a few
      // clocks, a stop), no datagram moving (one waiting for the emulator's answer is still) and
      // no rollback lately (trainings and commits come in bursts).
      const bool calm = !m_.bus.busy() && (!m_.port.busy() || m_.port.waiting_for_emulator()) && T >= calm_from_;
      if (calm) W = static_cast<uint32_t>(std::min<uint64_t>(max_window_, max_cycles - n));
      n += run_window(T, W) - T;
      if (st_.stops.any()) break;
    }
    flush_stage();
  }
  if (profiling_) {
    prof_.step_s += seconds_since(t0);
    prof_.cycles += n;
  }
  return n;
}

// ---- windows ----

template <class Ctl, class Ep, bool kTrace>
bool FastEngine<Ctl, Ep, kTrace>::RouteLog::garbled() const {
  auto any = [](const std::vector<Route>& routes) {
    for (const Route& r : routes)
      if (r.verdict == Verdict::Garbled) return true;
    return false;
  };
  if (any(at_start)) return true;
  for (size_t i = 0; i < used; ++i)
    if (any(changes[i].second)) return true;
  return false;
}

// The words receivers [first, end) get from the committed clocks [st.T, st.E), each from the route
// table in force at its clock.
template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::run_stage(const Stage& st, int first, int end) {
  const std::vector<Route>* table = &st.routes.at_start;
  size_t next = 0;
  for (uint64_t t = st.T; t < st.E; ++t) {
    while (next < st.routes.used && st.routes.changes[next].first <= t) table = &st.routes.changes[next++].second;
    mesh_words(t, *table, first, end);
  }
}

// The pending stage for every receiver, now: before the caller may change a fault, and before a
// stage that needs the noise generator.
template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::flush_stage() {
  if (!stage_.pending) return;
  Stopwatch sw(profiling_ ? &prof_.stage_s : nullptr);
  run_stage(stage_, 0, n_);
  stage_.pending = false;
}

template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::partition_run(Partition& p, uint64_t T, uint32_t W, bool speculative) {
  auto t0 = std::chrono::steady_clock::now();
  if (job_.stage) {
    Stopwatch sw(profiling_ ? &p.stage_s : nullptr);
    run_stage(stage_, p.first, p.end);
  }
  p.first_change = UINT64_MAX;
  p.transitions.clear();
  if (speculative) {
    double spent = 0;
    {
      Stopwatch sw(profiling_ ? &spent : nullptr);
      save_links(p);
    }
    p.checkpoint_s += spent;
    if (profiling_ && p.end > p.first) p.checkpoint_link_min_s = std::min(p.checkpoint_link_min_s, spent / (p.end - p.first));
  }
  const uint64_t E = T + W;
  for (uint64_t t = T; t < E; ++t) {
    links_cycle(p.first, p.end, t, &p);
    for (int i = p.first; i < p.end; ++i) {
      if (t + 1 < E && p.first_change == UINT64_MAX) {
        const LinkOut& a = out(t, i);
        const LinkOut& b = out(T - 1, i);
        if (a.state != b.state || a.reason != b.reason || a.laser != b.laser) p.first_change = t;
      }
    }
  }
  p.links_s += seconds_since(t0);
}

template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::coordinator_run(uint64_t T, uint32_t W, bool speculative, ControllerEvents& ev) {
  if (speculative) {
    Stopwatch sw(profiling_ ? &prof_.checkpoint_s : nullptr);
    save_coordinator();
  }
  speculating_ = speculative;
  in_window_ = true;
  route_log_.at_start = routes_;
  route_log_.used = 0;
  const uint64_t E = T + W;
  for (uint64_t t = T; t < E; ++t) {
    {
      Stopwatch sw(profiling_ ? &prof_.mesh_s : nullptr);
      // Within a window the links' lasers are those of the clock before it (checked afterwards).
      mesh_lights(t, t == T);
    }
    if (t == T) controller_inputs(t);
    controller_cycle(t, ev);
  }
  speculating_ = in_window_ = false;
}

template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::save_coordinator() {
  CoordinatorCheckpoint& c = coord_save_;
  c.ctl.save(*m_.ctl);
  c.bus = m_.bus;
  c.port = m_.port;
  c.pd_queue = pd_queue_;
  c.settle_until_ns = settle_until_ns_;
  c.dac_writes = st_.dac_writes;
  c.pd_reads = st_.pd_reads;
  c.last_irq = last_irq_;
  c.ctl_state_in = ctl_state_in_;
  c.ctl_reason_in = ctl_reason_in_;
  c.lit = lit_;
  c.light_dirty = st_.light_dirty;
  c.last_light_cycle = st_.last_light_cycle;
  c.mesh_saved = false;
  c.light_saved = false;
}

template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::restore_coordinator() {
  CoordinatorCheckpoint& c = coord_save_;
  c.ctl.restore(*m_.ctl);
  m_.bus = c.bus;
  m_.port = c.port;
  pd_queue_ = c.pd_queue;
  settle_until_ns_ = c.settle_until_ns;
  st_.dac_writes = c.dac_writes;
  st_.pd_reads = c.pd_reads;
  last_irq_ = c.last_irq;
  ctl_state_in_ = c.ctl_state_in;
  ctl_reason_in_ = c.ctl_reason_in;
  if (c.mesh_saved) st_.mesh->restore(c.mesh);
  for (size_t p = 0; p < lit_.size(); ++p)
    if (lit_[p] != c.lit[p]) st_.mesh->set_input_lit(static_cast<int>(p), c.lit[p]);
  lit_ = c.lit;
  st_.light_dirty = c.light_dirty;
  st_.last_light_cycle = c.last_light_cycle;
  if (c.light_saved) {
    st_.light = c.light;
    routes_ = c.routes;
  }
  read_control();
}

template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::save_links(const Partition& p) {
  for (int i = p.first; i < p.end; ++i) {
    LinkCheckpoint& c = link_saves_[static_cast<size_t>(i)];
    const size_t k = static_cast<size_t>(i);
    c.root.save(*m_.ep[k]);
    m_.sources[k].save(c.source);
    m_.scoreboards[k].save(c.scoreboard);
    c.board_stream = m_.board_stream[k];
    c.last_state = m_.last_state[k];
    c.control_applied = control_applied_[k];
  }
}

template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::restore_links(const Partition& p) {
  for (int i = p.first; i < p.end; ++i) {
    const LinkCheckpoint& c = link_saves_[static_cast<size_t>(i)];
    const size_t k = static_cast<size_t>(i);
    c.root.restore(*m_.ep[k]);
    m_.sources[k].restore(c.source);
    m_.scoreboards[k].restore(c.scoreboard);
    m_.board_stream[k] = c.board_stream;
    m_.last_state[k] = c.last_state;
    control_applied_[k] = c.control_applied;
  }
}

template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::worker(int w) {
  Partition& p = parts_[static_cast<size_t>(w) + 1];
  if (job_.kind == Job::Kind::Restore) restore_links(p);
  else partition_run(p, job_.T, job_.W, job_.speculative);
}

// Runs clocks [T, T + W) across the threads and commits them, or a shorter prefix when an
// assumption broke or a stop condition came earlier. Returns the first clock not committed.
template <class Ctl, class Ep, bool kTrace>
uint64_t FastEngine<Ctl, Ep, kTrace>::run_window(uint64_t T, uint32_t W) {
  const bool speculative = W > 1;
  ControllerEvents ev;
  auto run_all = [&](uint32_t w, bool spec) {
    ev = ControllerEvents{};
    job_ = Job{Job::Kind::Run, T, w, spec, stage_.pending};
    crew_->start();
    coordinator_run(T, w, spec, ev);
    partition_run(parts_[0], T, w, spec);
    auto t0 = std::chrono::steady_clock::now();
    crew_->wait();
    if (profiling_) prof_.wait_s += seconds_since(t0);
    stage_.pending = false;  // done by every partition, once
  };
  run_all(W, speculative);
  ++prof_.windows;
  uint64_t E = T + W;
  if (speculative) {
    // The first clock after which an assumption no longer held, or a stop came.
    uint64_t m = std::min(ev.first_change, ev.stop);
    for (const Partition& p : parts_) {
      m = std::min(m, p.first_change);
      for (const LinkTransition& tr : p.transitions) m = std::min(m, tr.cycle - 1);
    }
    if (m < E - 1) {
      ++prof_.rollbacks;
      job_.kind = Job::Kind::Restore;
      crew_->start();
      restore_coordinator();
      restore_links(parts_[0]);
      crew_->wait();
      run_all(static_cast<uint32_t>(m + 1 - T), false);
      E = m + 1;
      calm_from_ = E + kCoolDownCycles;
    }
  }
  // Commit [T, E).
  for (const Partition& p : parts_) {
    for (const LinkTransition& tr : p.transitions) st_.transitions.push_back(tr);
    if (!p.transitions.empty()) st_.stops.link_changed = true;
  }
  if (parts_.size() > 1) {
    // Transitions in the order the single-threaded run records them: by clock, then link.
    auto& all = st_.transitions;
    size_t first = all.size();
    for (const Partition& p : parts_) first -= p.transitions.size();
    std::stable_sort(all.begin() + static_cast<std::ptrdiff_t>(first), all.end(),
                     [](const LinkTransition& a, const LinkTransition& b) { return a.cycle < b.cycle; });
  }
  // The words every receiver gets L clocks on: computed by the partitions when the next window
  // starts, or now when a garbled output needs the noise generator in order.
  stage_.pending = true;
  stage_.T = T;
  stage_.E = E;
  std::swap(stage_.routes, route_log_);
  if (stage_.routes.garbled()) flush_stage();
  commit_clock(E, ev);
  if (control_differs()) apply_control();
  return E;
}

template <class Ctl, class Ep, bool kTrace>
ServerProfile FastEngine<Ctl, Ep, kTrace>::profile() const {
  ServerProfile p = prof_;
  if (crew_)
    for (const Partition& part : parts_) {
      p.links_s += part.links_s;
      p.stage_s += part.stage_s;
      p.checkpoint_s += part.checkpoint_s;
      if (part.checkpoint_link_min_s < 1e9)
        p.checkpoint_link_min_s = p.checkpoint_link_min_s > 0 ? std::min(p.checkpoint_link_min_s, part.checkpoint_link_min_s)
                                                              : part.checkpoint_link_min_s;
    }
  return p;
}

template <class Ctl, class Ep, bool kTrace>
void FastEngine<Ctl, Ep, kTrace>::finish() {
  crew_.reset();
  Base::finish();
}

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

HandOff measure_hand_off(int threads, int rounds) {
  if (threads < 2 || rounds < 10) throw std::invalid_argument("measure_hand_off: at least 2 threads and 10 rounds");
  std::atomic<uint64_t> sink{0};
  Crew crew(threads - 1, [&](int w) { sink.fetch_add(static_cast<uint64_t>(w), std::memory_order_relaxed); });
  for (int i = 0; i < 100; ++i) {  // wake the threads
    crew.start();
    crew.wait();
  }
  std::vector<double> us(static_cast<size_t>(rounds));
  for (auto& x : us) {
    auto t0 = std::chrono::steady_clock::now();
    crew.start();
    crew.wait();
    x = seconds_since(t0) * 1e6;
  }
  std::sort(us.begin(), us.end());
  return HandOff{us.front(), us[us.size() / 2]};
}

std::unique_ptr<ServerSim::Impl> make_fast_engine(ServerState& st) {
  if (st.cfg.trace_capable) return std::make_unique<FastEngine<Vmxtb_board_trace, Vlink_endpoint_trace, true>>(st);
  if (st.n_links == 32) return std::make_unique<FastEngine<Vmxtb_board_l32, Vlink_endpoint, false>>(st);
  return std::make_unique<FastEngine<Vmxtb_board, Vlink_endpoint, false>>(st);
}

}  // namespace mxtb::sim
