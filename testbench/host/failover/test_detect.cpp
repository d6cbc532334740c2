#include "host/failover/circuits.h"
#include "host/failover/detect.h"

#include <doctest/doctest.h>

using namespace mxtb::host::failover;
using mxtb::emu::EmuEvent;
using mxtb::host::fabric::EmuEventRecord;
using mxtb::link::LinkState;
using mxtb::link::Reason;

namespace {

constexpr int kLanes = 4, kLinks = 20;  // 5 XPUs x 4 lanes

EmuEventRecord link_change(uint64_t at, int link, LinkState from, LinkState to, Reason why = Reason::LossOfSignal) {
  return {at, EmuEvent::LinkChange, static_cast<uint32_t>(link), static_cast<uint32_t>(from), static_cast<uint32_t>(to),
          static_cast<uint32_t>(why)};
}

// The default tenant: a 2x2 torus of XPUs 0-3 (position 2, XPU 2, is XPU 0's +y/-y neighbour), spare 4.
TenantState tenant() {
  TenantState s;
  s.lanes = kLanes;
  s.placement = {2, 2, {0, 1, 2, 3}};
  s.free_spares = {4};
  s.map = mxtb::protocol::torus_map(mxtb::protocol::ServerShape{}, s.placement);
  return s;
}

// Every link Active, then each circuit of `dead` down since 1000 + its link number.
LinkView with_dead(const TenantState& s, std::vector<int> dead) {
  LinkView v(kLinks);
  for (auto& st : v.state) st = LinkState::Active;
  for (int x : dead)
    for (int l : circuits_of(s.map, x, kLanes, kLinks)) {
      v.state[static_cast<size_t>(l)] = LinkState::Detect;
      v.down_since[static_cast<size_t>(l)] = 1000 + l;
    }
  return v;
}

}  // namespace

TEST_CASE("detect: only a circuit that was up and dropped counts, not one training, moving or asked to retrain") {
  LinkView v(kLinks);
  CHECK(v.state[5] == LinkState::Reset);
  v.apply(link_change(100, 5, LinkState::Reset, LinkState::Detect));
  CHECK(v.down_since[5] == -1);  // never up: training
  v.apply(link_change(200, 5, LinkState::Detect, LinkState::Active));
  CHECK(v.active(5));
  v.apply(link_change(300, 5, LinkState::Active, LinkState::Retrain));
  CHECK(v.down_since[5] == 300);
  v.apply(link_change(400, 5, LinkState::Retrain, LinkState::Active));
  CHECK(v.down_since[5] == -1);
  v.apply(link_change(500, 5, LinkState::Active, LinkState::Retrain, Reason::None));
  CHECK(v.down_since[5] == 500);

  v.apply(link_change(600, 6, LinkState::Reset, LinkState::Active));
  v.apply(link_change(700, 6, LinkState::Active, LinkState::Retrain, Reason::RetrainRequest));
  CHECK(v.down_since[6] == -1);  // the controller asked it to retrain

  // A commit that moves port 7's circuit from port 9 to port 11 expects links 7, 9 and 11 to drop.
  mxtb::protocol::FabricMap from, to;
  from.port_target.assign(32, -1);
  from.port_target[7] = 9;
  to = from;
  to.port_target[7] = 11;
  v.down_since[9] = 650;
  v.expect_moves(from, to);
  CHECK(v.moving[7]);
  CHECK(v.moving[9]);
  CHECK(v.moving[11]);
  CHECK_FALSE(v.moving[5]);
  CHECK(v.down_since[9] == -1);  // what it did before no longer counts
  v.apply(link_change(800, 7, LinkState::Reset, LinkState::Active));
  CHECK_FALSE(v.moving[7]);  // Active again: its next drop counts
  v.apply(link_change(900, 11, LinkState::Reset, LinkState::Active));
  v.apply(link_change(950, 11, LinkState::Active, LinkState::Retrain));
  CHECK(v.down_since[11] == 950);

  v.apply(link_change(999, 25, LinkState::Reset, LinkState::Active));  // no such link: ignored
  v.apply({1000, EmuEvent::FaultFired, 5, 0, 0, 0});                    // not a link change
  CHECK(v.down_since[5] == 500);

  // A restarted host's first look: what is not Active counts as down since now.
  std::vector<mxtb::host::fabric::LinkStatus> st(kLinks, {LinkState::Active, Reason::None});
  st[3] = {LinkState::Detect, Reason::LossOfSignal};
  v.reset(st, 5000);
  CHECK(v.down_since[3] == 5000);
  CHECK(v.down_since[5] == -1);
  CHECK(v.lit(0, kLanes));  // lanes 0-2 Active
}

TEST_CASE("detect: the dead XPU is the one with every circuit down and no link of its own Active") {
  TenantState s = tenant();
  LinkView v = with_dead(s, {2});
  CHECK_FALSE(v.lit(2, kLanes));
  CHECK(v.lit(0, kLanes));  // its neighbours keep their circuits to XPUs 1 and 3
  auto d = suspect_failed_xpu(s, v);
  REQUIRE(d);
  CHECK(d->xpu == 2);
  CHECK_FALSE(d->tie);
  REQUIRE(d->downs.size() == 8);  // its 4 lanes and the 4 of its neighbours ending on it
  CHECK(d->downs[0] == 1002);     // XPU 0's lane 2 (+y) first
  CHECK(d->downs[1] == 1003);
  CHECK(std::is_sorted(d->downs.begin(), d->downs.end()));

  // Known to have failed: nothing more to find; a single circuit down is no failure.
  s.failed = {2};
  CHECK_FALSE(suspect_failed_xpu(s, v));
  s.failed.clear();
  LinkView one = with_dead(s, {});
  one.state[8] = LinkState::Detect;
  one.down_since[8] = 1008;
  CHECK_FALSE(suspect_failed_xpu(s, one));
}

TEST_CASE("detect: a diagonal pair dead at once ties with their living neighbours; light names the dead") {
  TenantState s = tenant();
  LinkView v = with_dead(s, {0, 3});  // XPUs 1 and 2 lose every circuit too: all four tie at 8
  // A dead XPU's far ends wait in Detect; a living XPU's light keeps the dead ones' receivers training.
  for (int l = 0; l < 4; ++l) v.state[static_cast<size_t>(l)] = LinkState::BlockLock;
  for (int l = 12; l < 16; ++l) v.state[static_cast<size_t>(l)] = LinkState::Ts1;
  auto d = suspect_failed_xpu(s, v);
  REQUIRE(d);
  CHECK(d->xpu == 0);  // both dark; XPU 0's first circuit dropped first (1000 ns, XPU 3's 1006 ns)
  CHECK(d->tie);
  s.failed = {0};
  d = suspect_failed_xpu(s, v);
  REQUIRE(d);
  CHECK(d->xpu == 3);  // the next look finds the other

  // The earliest to drop goes first, whatever its number.
  s.failed.clear();
  for (int l : circuits_of(s.map, 3, kLanes, kLinks)) v.down_since[static_cast<size_t>(l)] = 900;
  d = suspect_failed_xpu(s, v);
  REQUIRE(d);
  CHECK(d->xpu == 3);
  CHECK(d->downs[0] == 900);

  // Not yet dark towards every peer (a lane of XPU 1 facing XPU 0, one of XPU 2 facing XPU 3 still
  // in BlockLock): look again.
  s.failed.clear();
  v.state[4] = LinkState::BlockLock;
  v.state[8] = LinkState::BlockLock;
  CHECK_FALSE(suspect_failed_xpu(s, v));
}

TEST_CASE("detect: the evidence must name the same XPU for 1 us, a tie for 10 us, before it counts") {
  Naming n;
  const Suspect two{2, {1002, 1003, 1010}, false};
  CHECK_FALSE(n.look(two, 5000));
  CHECK_FALSE(n.look(two, 5999));
  auto d = n.look(two, 6000);
  REQUIRE(d);
  CHECK(d->xpu == 2);
  CHECK(d->failure_ns == 1002);
  CHECK(d->detect_ns == 1003);
  CHECK(d->noticed_ns == 6000);
  CHECK_FALSE(n.look(Suspect{3, {1, 2}, false}, 6500));  // another XPU: the hold starts again
  CHECK_FALSE(n.look(std::nullopt, 7000));                // nothing named: forgotten
  CHECK_FALSE(n.look(two, 7100));
  CHECK(n.look(two, 8100));
  const Suspect tie{2, {1002, 1003}, true};
  CHECK_FALSE(n.look(tie, 9000));   // a tie is another naming
  CHECK_FALSE(n.look(tie, 18999));
  CHECK(n.look(tie, 19000));
}

TEST_CASE("detect: a second failure explains the missing links only when all are its circuits") {
  const TenantState s = tenant();
  const std::vector<int> theirs = circuits_of(s.map, 3, kLanes, kLinks);
  CHECK(explained_by(theirs, 3, s.map, kLanes, kLinks));
  CHECK(explained_by({}, 3, s.map, kLanes, kLinks));
  std::vector<int> more = theirs;
  more.push_back(0);  // XPU 0's lane to XPU 1: not XPU 3's
  CHECK_FALSE(explained_by(more, 3, s.map, kLanes, kLinks));
}

TEST_CASE("detect: the replacement puts the chosen spare in the failed XPU's place, or keeps the tenant when degraded") {
  const TenantState s = tenant();
  const mxtb::protocol::ServerShape shape;
  Replacement r = decide_replacement(2, s.placement, {4}, {}, {}, shape);
  REQUIRE(r.choice.spare);
  CHECK(*r.choice.spare == 4);
  CHECK(r.placement.xpu_of_position == std::vector<int>{0, 1, 4, 3});
  CHECK(r.map.port_target == mxtb::protocol::torus_map(shape, {2, 2, {0, 1, 4, 3}}).port_target);
  CHECK(circuits_between(r.map, 0, 4, kLanes, kLinks) == 2);

  Replacement none = decide_replacement(2, s.placement, {}, {}, {}, shape);
  CHECK(none.choice.degraded());
  CHECK(none.placement.xpu_of_position == s.placement.xpu_of_position);
  CHECK(none.map.port_target.empty());
}

TEST_CASE("detect: the fault injector's last kill of an XPU dates its death") {
  const auto kill = [](uint64_t at, uint32_t xpu) {
    return EmuEventRecord{at, EmuEvent::FaultFired, static_cast<uint32_t>(mxtb::emu::FaultKind::KillXpu), xpu, 0, 0};
  };
  const std::vector<EmuEventRecord> log{kill(100, 2), link_change(150, 8, LinkState::Active, LinkState::Retrain),
                                        kill(300, 1), kill(400, 2),
                                        {500, EmuEvent::FaultFired, static_cast<uint32_t>(mxtb::emu::FaultKind::LaneDark), 3, 0, 0}};
  CHECK(kill_fault_ns(log, 2) == 400);
  CHECK(kill_fault_ns(log, 1) == 300);
  CHECK(kill_fault_ns(log, 3) == -1);  // a dark lane is no death
}
