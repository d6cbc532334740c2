#include "sim/link/link_pair.h"
#include "sim/common/rtl_assert.h"

#include "Vlink_endpoint.h"
#include "Vlink_endpoint_noassert.h"
#include "Vlink_endpoint_trace.h"
#include "rtl/cov/coverage_dump.h"
#include "verilated.h"
#include "verilated_fst_c.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
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
        src_a_(stream('a'), cfg.traffic_ab, cfg.seed ^ 0xA5A5),
        src_b_(stream('b'), cfg.traffic_ba, cfg.seed ^ 0x5A5A),
        sb_b_(stream('a'), cfg.traffic_ab, cfg.seed ^ 0x1111),
        sb_a_(stream('b'), cfg.traffic_ba, cfg.seed ^ 0x2222) {
    ctx_.randReset(0);
    catch_assertions(ctx_);
    if constexpr (kTrace) ctx_.traceEverOn(true);
    a_ = std::make_unique<V>(&ctx_, "a");
    b_ = std::make_unique<V>(&ctx_, "b");
    bool need_c = std::any_of(cfg.actions.begin(), cfg.actions.end(), [](const LinkAction& x) {
      return x.kind == LinkAction::Kind::SwapPeer || x.kind == LinkAction::Kind::MovePeer;
    });
    if (need_c) {
      c_ = std::make_unique<V>(&ctx_, "c");
      // C's XPU sends its own stream (B's traffic shape) and checks A's once A is moved to it.
      src_c_.emplace(stream('c'), cfg.traffic_ba, cfg.seed ^ 0xC3C3);
      sb_c_.emplace(stream('a'), cfg.traffic_ab, cfg.seed ^ 0x3333);
      sb_c_->resync(stream('a'));  // A's stream reaches C mid-way, if ever
    }
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
      case K::SwapPeer: peer_ = 'c'; break;  // unplanned: A still expects B, the scoreboards stay
      case K::MovePeer: move_to(x.endpoint); break;
      case K::Disable: endpoint(x.endpoint).enable_i = 0; break;
      case K::Enable: endpoint(x.endpoint).enable_i = 1; break;
      case K::Retrain: retrain_pulse_ = x.endpoint; break;
    }
  }

  void stop_traffic() override {
    src_a_.stop();
    src_b_.stop();
    if (src_c_) src_c_->stop();
  }

  // Both streams of A's planned circuit delivered up to their sources' last message. Strict
  // scoreboards make that "everything"; after a planned move, "everything since the move but
  // what the flush dropped". A scoreboard with errors counts as done: the verdict reports it.
  bool drained() const override {
    auto arrived = [](const TrafficSource& src, const Scoreboard& sb) {
      return !src.in_message() && (sb.errors() > 0 || last_arrived(src, sb));
    };
    return arrived(src_a_, sb_of(planned_)) && arrived(src_of(planned_), sb_a_);
  }

  link::LinkState state(char e) const override {
    return static_cast<link::LinkState>(e == 'a' ? a_->state_o : b_->state_o);
  }

  LinkPairResult result() const override {
    LinkPairResult r{};
    r.cycles = cycle_;
    r.a = report(*a_);
    r.b = report(*b_);
    if (c_) r.c = report(*c_);
    r.peer = planned_;
    // A's stream was checked by B's and (after a move) C's scoreboard: an error at either counts.
    const Scoreboard& at_peer = sb_of(planned_);
    r.ab = DirectionReport{src_a_.messages_sent(), sb_b_.messages(), sb_b_.words(), sb_b_.errors(),
                           sb_b_.first_error(), moves_, true};
    if (sb_c_) {
      r.ab.messages_delivered += sb_c_->messages();
      r.ab.words_delivered += sb_c_->words();
      r.ab.errors += sb_c_->errors();
      if (r.ab.first_error.empty()) r.ab.first_error = sb_c_->first_error();
    }
    r.ab.last_delivered = last_arrived(src_a_, at_peer);
    const TrafficSource& peer_src = src_of(planned_);
    r.ba = DirectionReport{peer_src.messages_sent(), sb_a_.messages(), sb_a_.words(), sb_a_.errors(),
                           sb_a_.first_error(), moves_, last_arrived(peer_src, sb_a_)};
    r.transitions = transitions_;
    r.ch_ab = ch_ab_.stats();
    r.ch_ba = ch_ba_.stats();
    return r;
  }

 private:
  // The source's last message arrived: a strict scoreboard (or one that has learnt where a moved
  // stream is) expects the message after it.
  static bool last_arrived(const TrafficSource& src, const Scoreboard& sb) {
    return !sb.resyncing() && sb.next_message() >= src.messages_sent();
  }
  uint64_t stream(char e) const { return cfg_.seed * 2 + (e == 'a' ? 1 : e == 'b' ? 2 : 3); }
  const Scoreboard& sb_of(char e) const { return e == 'c' ? *sb_c_ : sb_b_; }
  Scoreboard& sb_of(char e) { return e == 'c' ? *sb_c_ : sb_b_; }
  const TrafficSource& src_of(char e) const { return e == 'c' ? *src_c_ : src_b_; }

  // A planned circuit move: the controller points A's lane at `to` and sets A's expectation to
  // it (`to` expects A already). A move to where A already is changes nothing.
  void move_to(char to) {
    if (to == planned_ && to == peer_) return;
    const EndpointIdentity& id = to == 'c' ? cfg_.impostor : cfg_.b;
    peer_ = planned_ = to;
    ++moves_;
    a_->expect_xpu_i = id.xpu;
    a_->expect_lane_i = id.lane;
    follow_[0] = Follow{true, false, stream(to)};
    follow_[to == 'c' ? 2 : 1] = Follow{true, false, stream('a')};
  }

  // Each XPU's scoreboard follows the stream that reaches it after a move, from the moment its
  // endpoint is Active again (where the flush clears what it held for the old peer): until then
  // its XPU still drains the old peer's frames, checked strictly against the old stream.
  struct Follow {
    bool pending = false, left_active = false;
    uint64_t stream = 0;
  };
  void follow_moves() {
    V* eps[] = {a_.get(), b_.get(), c_.get()};
    Scoreboard* sbs[] = {&sb_a_, &sb_b_, sb_c_ ? &*sb_c_ : nullptr};
    for (int i = 0; i < 3; ++i) {
      Follow& f = follow_[i];
      if (!f.pending) continue;
      const bool active = static_cast<link::LinkState>(eps[i]->state_o) == link::LinkState::Active;
      if (!active) f.left_active = true;
      else if (f.left_active) {
        sbs[i]->resync(f.stream);
        f.pending = false;
      }
    }
  }

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
    V& peer_of_a = peer_ == 'c' ? *c_ : *b_;
    lane_in(peer_of_a, ch_ab_.step(lane_out(*a_), a_->laser_o));
    lane_in(*a_, ch_ba_.step(lane_out(peer_of_a), peer_of_a.laser_o));
    if (peer_ == 'c') lane_in(*b_, kDark);
    else if (c_) lane_in(*c_, kDark);

    xpu_tx(*a_, src_a_);
    xpu_tx(*b_, src_b_);
    xpu_rx(*b_, sb_b_);
    xpu_rx(*a_, sb_a_);
    if (c_) {
      xpu_tx(*c_, *src_c_);
      xpu_rx(*c_, *sb_c_);
    }
    if (retrain_pulse_) endpoint(retrain_pulse_).retrain_req_i = 1;

    clock();

    if (retrain_pulse_) {
      endpoint(retrain_pulse_).retrain_req_i = 0;
      retrain_pulse_ = 0;
    }
    ++cycle_;
    if (moves_) follow_moves();
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
  std::optional<TrafficSource> src_c_;
  std::optional<Scoreboard> sb_c_;
  char peer_ = 'b';     // where A's lane is connected now
  char planned_ = 'b';  // where the controller meant it to be (an unplanned swap leaves this)
  uint64_t moves_ = 0;  // planned moves
  Follow follow_[3];    // A's, B's and C's scoreboards
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
    // A stream that followed a planned peer move may lose what the flush dropped (frames held for
    // the old peer); everything after it must arrive, in order, so its last message must.
    for (auto [name, d] : {std::pair{"A->B", &r.ab}, std::pair{"B->A", &r.ba}}) {
      if (d->peer_moves == 0 && d->messages_delivered != d->messages_sent)
        f.push_back(fmt::format("{}: {} messages sent, {} delivered", name, d->messages_sent, d->messages_delivered));
      if (d->peer_moves > 0 && !d->last_delivered)
        f.push_back(fmt::format("{} (after {} peer moves): the last of {} messages sent never arrived ({} delivered)",
                                name, d->peer_moves, d->messages_sent, d->messages_delivered));
    }
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
