#include "link_pair.h"
#include "sim/rtl_assert.h"

#include "Vlink_endpoint.h"
#include "Vlink_endpoint_noassert.h"
#include "Vlink_endpoint_trace.h"
#include "rtl/cov/coverage_dump.h"
#include "verilated.h"
#include "verilated_fst_c.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace mxtb::sim {

struct LinkPair::Impl {
  virtual ~Impl() = default;
  virtual void step(uint64_t n) = 0;
  virtual uint64_t cycle() const = 0;
  virtual void apply(const LinkAction& a) = 0;
  virtual void stop_traffic() = 0;
  virtual bool drained() const = 0;
  virtual LinkPairResult result() const = 0;
  virtual link::LinkState state(char endpoint) const = 0;
};

namespace {

template <class V>
Raw66 lane_out(const V& m) {
  return Raw66{uint64_t{m.lane_tx_o[0]} | (uint64_t{m.lane_tx_o[1]} << 32),
               static_cast<uint8_t>(m.lane_tx_o[2] & 3u)};
}

template <class V>
void lane_in(V& m, const LaneChannel::Output& o) {
  m.lane_rx_i[0] = static_cast<uint32_t>(o.raw.lo);
  m.lane_rx_i[1] = static_cast<uint32_t>(o.raw.lo >> 32);
  m.lane_rx_i[2] = o.raw.hi;
  m.lane_sd_i = o.signal_detect;
}

template <class V, bool kTrace>
class PairSim final : public LinkPair::Impl {
 public:
  PairSim(const LinkPairConfig& cfg, const TraceOptions& trace)
      : cfg_(cfg),
        trace_(trace),
        ch_ab_(cfg.ab),
        ch_ba_(cfg.ba),
        src_a_(cfg.seed * 2 + 1, cfg.traffic_ab, cfg.seed ^ 0xA5A5),
        src_b_(cfg.seed * 2 + 2, cfg.traffic_ba, cfg.seed ^ 0x5A5A),
        sb_b_(cfg.seed * 2 + 1, cfg.traffic_ab, cfg.seed ^ 0x1111),
        sb_a_(cfg.seed * 2 + 2, cfg.traffic_ba, cfg.seed ^ 0x2222) {
    ctx_.randReset(0);
    catch_assertions(ctx_);
    if constexpr (kTrace) ctx_.traceEverOn(true);
    a_ = std::make_unique<V>(&ctx_, "a");
    b_ = std::make_unique<V>(&ctx_, "b");
    bool need_impostor = std::any_of(cfg.actions.begin(), cfg.actions.end(), [](const LinkAction& x) {
      return x.kind == LinkAction::Kind::SwapPeer;
    });
    if (need_impostor) c_ = std::make_unique<V>(&ctx_, "c");
    setup(*a_, cfg.a, cfg.b);
    setup(*b_, cfg.b, cfg.a);
    if (c_) setup(*c_, cfg.impostor, cfg.a);
    if constexpr (kTrace) {
      if (!trace.fst_path.empty()) {
        fst_ = std::make_unique<VerilatedFstC>();
        a_->trace(fst_.get(), 99);
        b_->trace(fst_.get(), 99);
        if (c_) c_->trace(fst_.get(), 99);
        fst_->open(trace.fst_path.c_str());
        if (!fst_->isOpen()) throw std::runtime_error("cannot open waveform file " + trace.fst_path);
      }
    }
    for (auto* m : models()) m->rst_ni = 0;
    for (int i = 0; i < 4; ++i) clock();
    for (auto* m : models()) m->rst_ni = 1;
    last_a_ = static_cast<link::LinkState>(a_->state_o);
    last_b_ = static_cast<link::LinkState>(b_->state_o);
  }

  ~PairSim() override {
    if constexpr (kTrace) {
      if (fst_) fst_->close();
    }
    for (auto* m : models()) m->final();
  }

  void step(uint64_t n) override {
    for (uint64_t i = 0; i < n; ++i) one_cycle();
  }

  uint64_t cycle() const override { return cycle_; }

  void apply(const LinkAction& x) override {
    using K = LinkAction::Kind;
    auto lanes = [&](auto fn) {
      if (x.lane == 0 || x.lane == 2) fn(ch_ab_);
      if (x.lane == 1 || x.lane == 2) fn(ch_ba_);
    };
    switch (x.kind) {
      case K::DarkOn: lanes([](LaneChannel& c) { c.set_dark(true); }); break;
      case K::DarkOff: lanes([](LaneChannel& c) { c.set_dark(false); }); break;
      case K::SetBer: lanes([&](LaneChannel& c) { c.set_ber(x.value); }); break;
      case K::SwapPeer: swapped_ = true; break;
      case K::Disable: endpoint(x.endpoint).enable_i = 0; break;
      case K::Enable: endpoint(x.endpoint).enable_i = 1; break;
      case K::Retrain: retrain_pulse_ = x.endpoint; break;
    }
  }

  void stop_traffic() override {
    src_a_.stop();
    src_b_.stop();
  }

  bool drained() const override {
    return sb_b_.messages() + sb_b_.errors() >= src_a_.messages_sent() &&
           sb_a_.messages() + sb_a_.errors() >= src_b_.messages_sent() && !src_a_.in_message() &&
           !src_b_.in_message();
  }

  link::LinkState state(char e) const override {
    return static_cast<link::LinkState>(e == 'a' ? a_->state_o : b_->state_o);
  }

  LinkPairResult result() const override {
    LinkPairResult r{};
    r.cycles = cycle_;
    r.a = report(*a_);
    r.b = report(*b_);
    r.ab = DirectionReport{src_a_.messages_sent(), sb_b_.messages(), sb_b_.words(), sb_b_.errors(),
                           sb_b_.first_error()};
    r.ba = DirectionReport{src_b_.messages_sent(), sb_a_.messages(), sb_a_.words(), sb_a_.errors(),
                           sb_a_.first_error()};
    r.transitions = transitions_;
    r.ch_ab = ch_ab_.stats();
    r.ch_ba = ch_ba_.stats();
    return r;
  }

 private:
  std::vector<V*> models() {
    std::vector<V*> v{a_.get(), b_.get()};
    if (c_) v.push_back(c_.get());
    return v;
  }

  V& endpoint(char e) {
    if (e == 'a') return *a_;
    if (e == 'b') return *b_;
    if (c_) return *c_;
    throw std::invalid_argument(fmt::format("no endpoint '{}'", e));
  }

  void setup(V& m, const EndpointIdentity& self, const EndpointIdentity& peer) {
    m.clk_i = 0;
    m.rst_ni = 1;
    m.xpu_id_i = self.xpu;
    m.lane_id_i = self.lane;
    m.expect_xpu_i = peer.xpu;
    m.expect_lane_i = peer.lane;
    m.check_peer_i = cfg_.check_peer;
    m.enable_i = 1;
    m.retrain_req_i = 0;
    m.irq_clear_i = 1;  // nobody services interrupts in a pair run
    m.tx_valid_i = 0;
    m.tx_data_i = 0;
    m.tx_last_i = 0;
    m.rx_ready_i = 1;
    m.eval();
  }

  static EndpointReport report(const V& m) {
    return EndpointReport{static_cast<link::LinkState>(m.state_o),
                          static_cast<link::Reason>(m.reason_o),
                          EndpointIdentity{m.peer_xpu_o, m.peer_lane_o},
                          m.cnt_frames_tx_o, m.cnt_frames_rx_o, m.cnt_crc_err_o, m.cnt_replays_o,
                          m.cnt_retrains_o, m.cnt_bad_blocks_o};
  }

  void clock() {
    for (auto* m : models()) {
      m->clk_i = 1;
      m->eval();
    }
    if constexpr (kTrace) {
      if (fst_ && cycle_ >= trace_.from_cycle && cycle_ < trace_.to_cycle)
        fst_->dump(static_cast<uint64_t>(cycle_ * 2 + 1));
    }
    for (auto* m : models()) {
      m->clk_i = 0;
      m->eval();
    }
    if constexpr (kTrace) {
      if (fst_ && cycle_ >= trace_.from_cycle && cycle_ < trace_.to_cycle)
        fst_->dump(static_cast<uint64_t>(cycle_ * 2 + 2));
    }
  }

  void xpu_tx(V& m, TrafficSource& src) {
    TrafficSource::Drive d = src.drive();
    m.tx_valid_i = d.valid;
    m.tx_data_i = d.data;
    m.tx_last_i = d.last;
    if (d.valid && m.tx_ready_o) src.fire();
  }

  void xpu_rx(V& m, Scoreboard& sb) {
    bool ready = sb.ready();
    m.rx_ready_i = ready;
    if (ready && m.rx_valid_o) sb.deliver(m.rx_data_o, m.rx_last_o, cycle_);
  }

  void one_cycle() {
    static const LaneChannel::Output kDark{Raw66{}, false};
    V& peer_of_a = swapped_ ? *c_ : *b_;
    lane_in(peer_of_a, ch_ab_.step(lane_out(*a_), a_->laser_o));
    lane_in(*a_, ch_ba_.step(lane_out(peer_of_a), peer_of_a.laser_o));
    if (swapped_) lane_in(*b_, kDark);
    else if (c_) lane_in(*c_, kDark);

    xpu_tx(*a_, src_a_);
    xpu_tx(*b_, src_b_);
    xpu_rx(*b_, sb_b_);
    xpu_rx(*a_, sb_a_);
    if (retrain_pulse_) endpoint(retrain_pulse_).retrain_req_i = 1;

    clock();

    if (retrain_pulse_) {
      endpoint(retrain_pulse_).retrain_req_i = 0;
      retrain_pulse_ = 0;
    }
    ++cycle_;
    check_assertions(ctx_, cycle_);
    note_state('a', *a_, last_a_);
    note_state('b', *b_, last_b_);
  }

  void note_state(char e, const V& m, link::LinkState& last) {
    auto now = static_cast<link::LinkState>(m.state_o);
    if (now != last) {
      transitions_.push_back(Transition{cycle_, e, last, now, static_cast<link::Reason>(m.reason_o)});
      last = now;
    }
  }

  LinkPairConfig cfg_;
  TraceOptions trace_;
  VerilatedContext ctx_;
  std::unique_ptr<V> a_, b_, c_;
  rtl::CoverageDump cov_{ctx_, "link_pair"};  // after the models: writes before they go
  std::unique_ptr<VerilatedFstC> fst_;
  LaneChannel ch_ab_, ch_ba_;
  TrafficSource src_a_, src_b_;
  Scoreboard sb_b_, sb_a_;
  bool swapped_ = false;
  char retrain_pulse_ = 0;
  uint64_t cycle_ = 0;
  link::LinkState last_a_{}, last_b_{};
  std::vector<Transition> transitions_;
};

}  // namespace

LinkPair::LinkPair(const LinkPairConfig& cfg, const TraceOptions& trace, bool apply_actions_itself)
    : cfg_(cfg), apply_actions_(apply_actions_itself) {
  std::stable_sort(cfg_.actions.begin(), cfg_.actions.end(),
                   [](const LinkAction& x, const LinkAction& y) { return x.cycle < y.cycle; });
  if (trace.fst_path.empty() && !cfg_.assertions)
    impl_ = std::make_unique<PairSim<Vlink_endpoint_noassert, false>>(cfg_, trace);
  else if (trace.fst_path.empty())
    impl_ = std::make_unique<PairSim<Vlink_endpoint, false>>(cfg_, trace);
  else
    impl_ = std::make_unique<PairSim<Vlink_endpoint_trace, true>>(cfg_, trace);
}

LinkPair::~LinkPair() = default;

void LinkPair::step(uint64_t cycles) { impl_->step(cycles); }
uint64_t LinkPair::cycle() const { return impl_->cycle(); }
void LinkPair::apply(const LinkAction& a) { impl_->apply(a); }
link::LinkState LinkPair::state(char endpoint) const { return impl_->state(endpoint); }

void LinkPair::act() {
  uint64_t now = impl_->cycle();
  while (next_action_ < cfg_.actions.size() && cfg_.actions[next_action_].cycle <= now) {
    if (apply_actions_) impl_->apply(cfg_.actions[next_action_]);
    ++next_action_;
  }
  if (traffic_phase_ && now >= cfg_.traffic_cycles) {
    traffic_phase_ = false;
    drain_start_ = now;
    impl_->stop_traffic();
  }
  if (!traffic_phase_ && (now - drain_start_) % kDrainCheckCycles == 0) {
    // Done when everything sent was delivered and the links have settled where the scenario
    // expects them (a fault late in the run may leave a link still retraining), or out of time.
    drained_ = drained_ || impl_->drained();
    bool settled = impl_->state('a') == cfg_.expect_state_a && impl_->state('b') == cfg_.expect_state_b;
    if ((drained_ && settled) || now - drain_start_ >= cfg_.drain_cycles) finished_ = true;
  }
}

uint64_t LinkPair::cycles_to_next_action() const {
  uint64_t now = impl_->cycle();
  uint64_t next = traffic_phase_ ? cfg_.traffic_cycles
                                 : drain_start_ + ((now - drain_start_) / kDrainCheckCycles + 1) * kDrainCheckCycles;
  if (next_action_ < cfg_.actions.size()) next = std::min(next, cfg_.actions[next_action_].cycle);
  return next > now ? next - now : 1;
}

void LinkPair::run() {
  for (act(); !finished_; act()) impl_->step(cycles_to_next_action());
}

LinkPairResult LinkPair::result() const {
  LinkPairResult r = impl_->result();
  r.drained = drained_;
  auto& f = r.failures;
  if (r.ab.errors) f.push_back(fmt::format("A->B scoreboard: {} errors; first: {}", r.ab.errors, r.ab.first_error));
  if (r.ba.errors) f.push_back(fmt::format("B->A scoreboard: {} errors; first: {}", r.ba.errors, r.ba.first_error));
  if (cfg_.expect_all_delivered) {
    if (r.ab.messages_delivered != r.ab.messages_sent)
      f.push_back(fmt::format("A->B: {} messages sent, {} delivered", r.ab.messages_sent, r.ab.messages_delivered));
    if (r.ba.messages_delivered != r.ba.messages_sent)
      f.push_back(fmt::format("B->A: {} messages sent, {} delivered", r.ba.messages_sent, r.ba.messages_delivered));
  }
  if (r.a.state != cfg_.expect_state_a)
    f.push_back(fmt::format("A ends in {} ({}), expected {}", link::to_string(r.a.state),
                            link::to_string(r.a.reason), link::to_string(cfg_.expect_state_a)));
  if (r.b.state != cfg_.expect_state_b)
    f.push_back(fmt::format("B ends in {} ({}), expected {}", link::to_string(r.b.state),
                            link::to_string(r.b.reason), link::to_string(cfg_.expect_state_b)));
  if (cfg_.expect_reason_a && r.a.reason != *cfg_.expect_reason_a)
    f.push_back(fmt::format("A's reason is {}, expected {}", link::to_string(r.a.reason),
                            link::to_string(*cfg_.expect_reason_a)));
  return r;
}

}  // namespace mxtb::sim
