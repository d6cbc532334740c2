// The placement across boards (host/failover/rack_commit.h): its first phase computed on its own,
// then its rules one by one, each both ways, against a rack of two servers emulated and served on
// loopback (`mxtb rack --serve`, traces/scenarios/rack/rack-2x1.json, lockstep), whose tenant's
// XPU 1 of server 0 is replaced by the spare XPU 4 of server 1: both meshes change, and three of
// the spare's circuits cross the fibres. Server 1 is reached through a UDP shim that can go down
// (its board's network unplugged).
#include "host/failover/rack_commit.h"
#include "host/failover/rack_failover.h"

#include "host/fabric/emulator_process.h"
#include "testbench/host/fabric/loopback_ports.h"
#include "host/fabric/udp_shim.h"
#include "sim/rack/spare_ready.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace mxtb;
using namespace mxtb::host::failover;
using mxtb::host::fabric::Board;
using mxtb::host::fabric::Client;
using mxtb::host::fabric::ClientOptions;
using mxtb::host::fabric::EmulatorProcess;
using Maps = std::vector<std::vector<int>>;

namespace {

protocol::RackShape two_servers() {
  protocol::RackShape r;
  r.servers_x = 2;
  r.servers_y = 1;
  return r;
}

// The whole-rack tenant as rack-2x1.json brings it up (its fibres spare-ready: sim/rack/spare_ready.h).
protocol::RackMap bring_up(const protocol::RackShape& shape) {
  sim::rack::RackConfig c;
  c.shape = shape;
  c.server.shape = shape.server;
  c.wiring = protocol::torus_wiring(shape);
  c.tenant = protocol::whole_rack_placement(shape);
  return sim::rack::bring_up_map(c);
}

// The bring-up's map, and the same with server 0's XPU 1 replaced by server 1's spare XPU 4 (every
// circuit that stays on its fibre).
Maps tenant_maps(const protocol::RackShape& shape, bool spare) {
  const protocol::RackMap running = bring_up(shape);
  if (!spare) return running.port_target;
  protocol::RackPlacement p = protocol::whole_rack_placement(shape);
  *std::find(p.xpu_of_position.begin(), p.xpu_of_position.end(), protocol::RackXpu{0, 1}) = protocol::RackXpu{1, 4};
  return protocol::rack_torus_map(shape, protocol::torus_wiring(shape), p, &running).port_target;
}

bool has_step(const RackCommitResult& r, int server, RackStep step) {
  return std::any_of(r.steps.begin(), r.steps.end(), [&](const RackStepRecord& s) { return s.server == server && s.step == step; });
}

std::string steps(const RackCommitResult& r) {
  std::string out = fmt::format("{}: {}\n", to_string(r.outcome), r.why);
  for (const auto& s : r.steps)
    out += fmt::format("  server {} {:<8} {:>9.1f} us  {}: {}\n", s.server, to_string(s.step), (s.end_ns - s.start_ns) / 1000.0,
                       s.ok ? "ok" : "FAILED", s.detail.substr(0, 60));
  return out;
}

struct ServedRack {
  protocol::RackShape shape = two_servers();
  int port = test_ports::free_port_pair();
  std::string out = std::string(MXTB_BINARY_DIR) + "/rack-commit";
  EmulatorProcess emulator;
  mxtb::host::fabric::LossyShim shim;  // server 1's network
  ClientOptions near, far;
  std::unique_ptr<Client> c0, c1;
  std::unique_ptr<Board> b0, b1;

  ServedRack()
      : emulator(MXTB_EXE,
                 {"--scenario", std::string(MXTB_SOURCE_DIR) + "/traces/scenarios/rack/rack-2x1.json", "--serve", "--time-mode",
                  "lockstep", "--listen", fmt::format("127.0.0.1:{}", port), "--out", out},
                 (std::filesystem::create_directories(out), out + "/rack.log"), std::chrono::seconds(120), "rack"),
        shim(fmt::format("udp://127.0.0.1:{}", port + 1), 0, 0, 0, 1) {
    near.timeout = std::chrono::milliseconds(10'000);
    far.timeout = std::chrono::milliseconds(300);
    far.retries = 2;
    far.busy_limit = std::chrono::milliseconds(3000);
    c0 = std::make_unique<Client>(fmt::format("udp://127.0.0.1:{}", port), near);
    b0 = std::make_unique<Board>(*c0);
    reconnect();
  }
  Board* reconnect() {  // a fresh client of server 1 through the shim (throws while it is down)
    auto c = std::make_unique<Client>(shim.target(), far);
    auto b = std::make_unique<Board>(*c);
    b1 = std::move(b);
    c1 = std::move(c);
    return b1.get();
  }
  Board& board(int s) { return s == 0 ? *b0 : *b1; }
  std::vector<RackBoard> boards(const Maps& before, const Maps& after) {
    std::vector<RackBoard> v(2);
    for (int s = 0; s < 2; ++s) {
      v[static_cast<size_t>(s)].server = s;
      v[static_cast<size_t>(s)].board = &board(s);
      v[static_cast<size_t>(s)].before = before[static_cast<size_t>(s)];
      v[static_cast<size_t>(s)].after = after[static_cast<size_t>(s)];
    }
    v[1].reconnect = [this] { return reconnect(); };
    return v;
  }
  Maps active() { return {b0->active_map(shape.server.mesh_ports), b1->active_map(shape.server.mesh_ports)}; }
  std::vector<uint32_t> generations() { return {b0->active_generation(), b1->active_generation()}; }
  // Every lane `maps` uses on both boards Active within `ns` of board time.
  bool lanes_active(const Maps& maps, uint64_t ns) {
    std::vector<Board*> both{b0.get(), b1.get()};
    return host::failover::lanes_active(both, maps, shape.server.links(), ns);
  }
};

}  // namespace

TEST_CASE("rack commit: the first phase leaves unused only the fibre inputs whose far light changes") {
  const protocol::RackShape shape = two_servers();
  const auto wiring = protocol::torus_wiring(shape);
  const Maps before = tenant_maps(shape, false), after = tenant_maps(shape, true);
  const Maps p1 = rack_phase1(shape, wiring, before, after);
  const int links = shape.server.links();
  int left_unused = 0;
  for (int s = 0; s < 2; ++s)
    for (int port = 0; port < shape.server.mesh_ports; ++port) {
      const int got = p1[static_cast<size_t>(s)][static_cast<size_t>(port)];
      const int want = after[static_cast<size_t>(s)][static_cast<size_t>(port)];
      CAPTURE(s);
      CAPTURE(port);
      if (port < links) CHECK(got == want);  // every lane's light goes where the new map sends it
      else if (got != want) {
        CHECK(got == -1);
        ++left_unused;
      }
    }
  // The spare's three circuits through the fibres arrive at server 0 from a changed source, and XPU
  // 2 of server 1 (the dead XPU's +x neighbour) gets its light from inside server 1 now: server 0's
  // fibre inputs of those circuits wait for phase 2, and so does server 1's input from XPU 0.
  CHECK(left_unused >= 3);
  // The same maps on both sides: nothing left unused; the way back mirrors the way there.
  CHECK(rack_phase1(shape, wiring, after, after) == after);
  const Maps back = rack_phase1(shape, wiring, after, before);
  for (int s = 0; s < 2; ++s)
    for (int port = 0; port < links; ++port) CHECK(back[static_cast<size_t>(s)][static_cast<size_t>(port)] == before[static_cast<size_t>(s)][static_cast<size_t>(port)]);
  CHECK_THROWS_AS(rack_phase1(shape, wiring, {before[0]}, after), std::invalid_argument);
  // A board outside the change is passed as all -1 on both sides (the transaction does not read
  // it): its light into the changing board's fibre inputs does not change, so those inputs stay
  // lit. Left unused, their elements were free to the changed circuits' paths in phase 1, and a
  // same-server failover broke every fibre circuit into the failing board (found 2026-12-07).
  Maps only0_before = before, only0_after = after;
  only0_before[1].assign(only0_before[1].size(), -1);
  only0_after[1] = only0_before[1];
  const Maps own = rack_phase1(shape, wiring, only0_before, only0_after);
  CHECK(own[0] == only0_after[0]);
  CHECK(own[1] == only0_after[1]);
}

TEST_CASE("rack commit: the circuits a dead XPU lit, on its own server and one fibre on") {
  const protocol::RackShape shape = two_servers();
  const auto wiring = protocol::torus_wiring(shape);
  const Maps maps = tenant_maps(shape, false);
  const int links = shape.server.links(), lanes = shape.server.lanes_per_xpu;
  const protocol::RackXpu dead{0, 1};
  const auto got = circuits_from_dead(shape, wiring, maps, {dead});
  auto has = [&](int s, int in) { return std::find(got.begin(), got.end(), std::make_pair(s, in)) != got.end(); };
  // Every lane of the dead XPU that the tenant maps, and nothing else on its server.
  int own = 0, crossing = 0;
  for (int in = 0; in < shape.server.mesh_ports; ++in) {
    const bool lane_of_dead = in >= lanes && in < 2 * lanes;
    CHECK(has(0, in) == (lane_of_dead && maps[0][static_cast<size_t>(in)] >= 0));
    if (lane_of_dead && maps[0][static_cast<size_t>(in)] >= 0) {
      ++own;
      if (maps[0][static_cast<size_t>(in)] >= links) ++crossing;  // out through a fibre port
    }
  }
  CHECK(own == lanes);
  // On the other server: exactly the fibre inputs its crossing circuits arrive at, each mapped on.
  REQUIRE(crossing >= 1);
  int far = 0;
  for (const auto& [s, in] : got)
    if (s == 1) {
      CHECK(in >= links);
      CHECK(maps[1][static_cast<size_t>(in)] >= 0);
      ++far;
    }
  CHECK(far == crossing);
  // Nobody dead, the unmapped spare dead, or the far server's map unknown (all -1): nothing more.
  CHECK(circuits_from_dead(shape, wiring, maps, {}).empty());
  CHECK(circuits_from_dead(shape, wiring, maps, {{0, 4}}).empty());
  Maps unknown = maps;
  unknown[0].assign(unknown[0].size(), -1);
  CHECK(circuits_from_dead(shape, wiring, unknown, {dead}).empty());
  CHECK_THROWS_WITH_AS(circuits_from_dead(shape, wiring, {maps[0]}, {dead}), doctest::Contains("1 maps for 2 servers"),
                       std::invalid_argument);
}

TEST_CASE("rack failover: the spares in the host's order, and the dead XPU in one look") {
  protocol::RackShape shape;  // 2x2 servers
  const std::vector<protocol::RackXpu> spares{{3, 4}, {1, 4}, {2, 4}, {0, 4}};
  // Server 1's failure: its own spare, then servers 0 and 3 (one hop), then 2 (two hops).
  const auto order = spare_order(shape, {1, 2}, spares);
  CHECK(order == std::vector<protocol::RackXpu>{{1, 4}, {0, 4}, {3, 4}, {2, 4}});
  // Another tenant on server 0: at the same distance, server 3's spare comes first; its own
  // server's spare still first, the far server still last.
  const std::vector<protocol::RackPlacement> others{{2, 1, {{0, 0}, {0, 1}}}};
  CHECK(spare_order(shape, {1, 2}, spares, &others) == std::vector<protocol::RackXpu>{{1, 4}, {3, 4}, {0, 4}, {2, 4}});
  const protocol::RackPlacement p = protocol::whole_rack_placement(shape);
  std::vector<std::vector<bool>> active(4, std::vector<bool>(static_cast<size_t>(shape.server.links()), true));
  CHECK(dead_tenant_position(shape, p, active) == -1);
  for (int l = 8; l < 12; ++l) active[2][static_cast<size_t>(l)] = false;  // server 2's XPU 2
  active[2][3] = false;  // a neighbour's lane facing it: not a death
  const int pos = dead_tenant_position(shape, p, active);
  REQUIRE(pos >= 0);
  CHECK(p.xpu_of_position[static_cast<size_t>(pos)] == protocol::RackXpu{2, 2});
}

TEST_CASE("rack commit: a board the rack does not have is refused by name") {
  std::vector<RackBoard> bs(1);
  bs[0].server = 5;
  RackCommitOptions o;  // 2x2 servers
  CHECK_THROWS_WITH_AS(rack_commit(bs, o), "rack commit: server 5 is not one of the rack's 4 (or has no board client)",
                       std::invalid_argument);
}

TEST_CASE("rack commit: its rules, each both ways, on a served rack of two servers") {
  ServedRack r;
  const Maps M0 = tenant_maps(r.shape, false), M1 = tenant_maps(r.shape, true);
  REQUIRE(M0 != M1);
  REQUIRE(M0[0] != M1[0]);
  REQUIRE(M0[1] != M1[1]);  // both boards change
  REQUIRE(r.active() == M0);  // the rack's bring-up placed the tenant
  REQUIRE(r.lanes_active(M0, 200'000));
  RackCommitOptions o;
  o.shape = r.shape;
  o.wiring = protocol::torus_wiring(r.shape);

  SUBCASE("check: a journal other than what the boards run refuses before anything is staged") {
    const auto gens = r.generations();
    auto wrong = r.boards(M0, M1);
    wrong[1].before = M1[1];
    const RackCommitResult res = rack_commit(wrong, o);
    INFO(steps(res));
    CHECK(res.outcome == RackOutcome::Refused);
    CHECK(res.why.find("server 1 runs a map other than the journal's") == 0);
    CHECK_FALSE(has_step(res, 0, RackStep::Stage));
    CHECK(r.generations() == gens);
    CHECK(r.active() == M0);
  }

  SUBCASE("stage: a board whose map does not route refuses the whole; the other staged and committed nothing") {
    const auto gens = r.generations();
    Maps bad = M1;
    bad[1][1] = bad[1][0];  // two inputs onto one output
    auto bs = r.boards(M0, bad);
    const RackCommitResult res = rack_commit(bs, o);
    INFO(steps(res));
    CHECK(res.outcome == RackOutcome::Refused);
    CHECK(res.why.find("server 1 did not stage its map: bad map; nothing was committed") == 0);
    CHECK(has_step(res, 0, RackStep::Stage));
    CHECK_FALSE(has_step(res, 0, RackStep::Phase1));
    CHECK(r.generations() == gens);
    CHECK(r.active() == M0);
  }

  SUBCASE("commit and verify: the spare in the other server takes the XPU's place on both boards, and back") {
    const auto gens = r.generations();
    auto there = r.boards(M0, M1);
    const RackCommitResult res = rack_commit(there, o);
    INFO(steps(res));
    MESSAGE(steps(res));  // each step's board time, in the log
    REQUIRE(res.outcome == RackOutcome::Committed);
    CHECK(res.why.empty());
    CHECK(r.active() == M1);
    for (int s = 0; s < 2; ++s) {
      CHECK(has_step(res, s, RackStep::Phase2));
      CHECK(has_step(res, s, RackStep::Verify));
      CHECK(r.generations()[static_cast<size_t>(s)] > gens[static_cast<size_t>(s)]);
    }
    CHECK(r.lanes_active(M1, 0));  // the verify waited for them
    auto back = r.boards(M1, M0);
    const RackCommitResult res2 = rack_commit(back, o);
    INFO(steps(res2));
    if (res2.outcome != RackOutcome::Committed)
      for (int s = 0; s < 2; ++s)
        for (const auto& e : r.board(s).pop_events())
          if (e.kind == emu::EmuEvent::Controller && e.a != 1)
            MESSAGE(fmt::format("server {} t={} type={} code={} index={} data={}", s, e.time_ns, e.a, e.b, e.c, e.data));
    CHECK(res2.outcome == RackOutcome::Committed);
    CHECK(r.active() == M0);
  }

  SUBCASE("hold: every board's links held from before the first commit to after the last, and released before the verify") {
    CHECK_FALSE(r.b0->links_held());
    CHECK_FALSE(r.b1->links_held());
    std::vector<std::string> seen;
    o.before_step = [&](int server, RackStep step) {
      if (step == RackStep::Phase1 || step == RackStep::Phase2 || step == RackStep::Verify)
        seen.push_back(fmt::format("{} {} {}{}", server, to_string(step), r.b0->links_held() ? "H" : "-", r.b1->links_held() ? "H" : "-"));
    };
    auto there = r.boards(M0, M1);
    const RackCommitResult res = rack_commit(there, o);
    INFO(steps(res));
    REQUIRE(res.outcome == RackOutcome::Committed);
    const std::string all = fmt::format("{}", fmt::join(seen, "; "));
    INFO(all);
    for (const std::string& s : seen) CHECK(s.substr(s.size() - 2) == (s.find("verify") != std::string::npos ? "--" : "HH"));
    CHECK(all.find("phase1") != std::string::npos);
    CHECK(all.find("verify") != std::string::npos);
    CHECK(has_step(res, 0, RackStep::Hold));
    CHECK(has_step(res, 1, RackStep::Release));
    CHECK_FALSE(r.b0->links_held());
    CHECK_FALSE(r.b1->links_held());
  }

  SUBCASE("a board that stops answering mid-way: every board back as it was once it answers") {
    std::thread restore;
    o.before_step = [&](int server, RackStep step) {
      if (server == 1 && step == RackStep::Phase2 && !restore.joinable()) {
        r.shim.set_down(true);
        restore = std::thread([&] {
          // Well past what the far client gives a board (an attempt of 300 ms and a status of
          // 3 x 300 ms: 1.2 s, which 1.2 s of silence only just passed), within the deadline.
          std::this_thread::sleep_for(std::chrono::milliseconds(2500));
          r.shim.set_down(false);
        });
      }
    };
    o.answer_deadline = std::chrono::milliseconds(5000);
    auto bs = r.boards(M0, M1);
    const RackCommitResult res = rack_commit(bs, o);
    restore.join();
    INFO(steps(res));
    CHECK(res.outcome == RackOutcome::RolledBack);
    CHECK(res.why.find("server 1's second phase: no answer") == 0);
    CHECK(res.unresolved.empty());
    CHECK(has_step(res, 0, RackStep::Rollback));
    CHECK(r.active() == M0);
    CHECK_FALSE(r.b0->links_held());  // the rollback released them too
    CHECK_FALSE(r.b1->links_held());
    CHECK(r.lanes_active(M0, 500'000));
  }

  SUBCASE("a board silent past the deadline: unresolved, then recovered once it answers") {
    o.before_step = [&](int server, RackStep step) {
      if (server == 1 && step == RackStep::Phase2) r.shim.set_down(true);
    };
    o.answer_deadline = std::chrono::milliseconds(1500);
    auto bs = r.boards(M0, M1);
    const RackCommitResult res = rack_commit(bs, o);
    INFO(steps(res));
    CHECK(res.outcome == RackOutcome::Unresolved);
    CHECK(std::find(res.unresolved.begin(), res.unresolved.end(), 1) != res.unresolved.end());
    r.shim.set_down(false);
    o.before_step = nullptr;
    auto again = r.boards(M0, M0);
    const RackCommitResult rec = rack_recover(again, o);
    INFO(steps(rec));
    CHECK(rec.outcome == RackOutcome::RolledBack);
    CHECK(rec.unresolved.empty());
    CHECK(r.active() == M0);
    CHECK_FALSE(r.b1->links_held());  // held when it went silent, released by the recovery
    CHECK(r.lanes_active(M0, 500'000));
  }

  SUBCASE("a rollback that cannot light its old map whole: the circuits gone dark left out, the rest back") {
    // A tenant XPU of server 1 (XPU 0) dies during server 1's second phase: that phase's verify
    // fails, and `before` itself now has dark circuits (the dead XPU's lanes). The rollback leaves
    // those out and puts the rest back; nothing is unresolved.
    o.before_step = [&](int server, RackStep step) {
      if (server == 1 && step == RackStep::Phase2) r.b1->arm_fault(emu::FaultKind::KillXpu, 0, 0);
    };
    auto bs = r.boards(M0, M1);
    const RackCommitResult res = rack_commit(bs, o);
    INFO(steps(res));
    CHECK(res.outcome == RackOutcome::RolledBack);
    CHECK(res.unresolved.empty());
    REQUIRE_FALSE(res.left_out.empty());
    Maps expected = M0;
    for (const auto& [server, input] : res.left_out) {
      CHECK(M0[static_cast<size_t>(server)][static_cast<size_t>(input)] >= 0);
      expected[static_cast<size_t>(server)][static_cast<size_t>(input)] = -1;
    }
    // Every dark circuit is one the dead XPU's light fed: its own lanes (server 1's inputs 0-3),
    // or a fibre from it.
    for (const auto& [server, input] : res.left_out)
      if (server == 1 && input < r.shape.server.links()) CHECK(input / r.shape.server.lanes_per_xpu == 0);
    CHECK(r.active() == expected);
    CHECK(res.why.find("rolled back without the circuits gone dark since") != std::string::npos);
  }

  SUBCASE("a commit that fails its verify (the spare dead): rolled back on every board") {
    r.b1->arm_fault(emu::FaultKind::KillXpu, 4, 0);
    r.b0->clock().wait_ns(5'000);
    const auto gens = r.generations();
    auto bs = r.boards(M0, M1);
    const RackCommitResult res = rack_commit(bs, o);
    INFO(steps(res));
    CHECK(res.outcome == RackOutcome::RolledBack);
    CHECK(res.why.find("server 1's first phase: verify failed, rolled back") == 0);
    CHECK(has_step(res, 0, RackStep::Phase1));
    CHECK(has_step(res, 0, RackStep::Rollback));
    CHECK(r.active() == M0);
    CHECK(r.generations()[0] >= gens[0] + 2);  // committed, then committed back
    CHECK(res.left_out.empty());  // the dead spare is in no circuit of `before`: nothing left out
    CHECK(r.lanes_active(M0, 500'000));
  }
}

TEST_CASE("rack failover: the spare in the failing server re-points one mesh; the next, in the other server, both") {
  ServedRack r;
  const Maps M0 = tenant_maps(r.shape, false);
  REQUIRE(r.active() == M0);
  REQUIRE(r.lanes_active(M0, 200'000));
  RackFailoverOptions o;
  o.commit.shape = r.shape;
  o.commit.wiring = protocol::torus_wiring(r.shape);
  RackTenant t;
  t.placement = protocol::whole_rack_placement(r.shape);
  t.running = bring_up(r.shape);
  t.spares = {{0, 4}, {1, 4}};
  std::vector<Board*> boards{r.b0.get(), r.b1.get()};
  std::string table = "  case                      failed  spare  boards  XPUs whose links left Active      lanes  errors   lost  detect    total\n";
  auto fail = [&](protocol::RackXpu x) {
    for (Board* b : boards) b->pop_events();
    const uint64_t at = r.b0->clock().now_ns() + 5'000;
    boards[static_cast<size_t>(x.server)]->arm_fault(emu::FaultKind::KillXpu, static_cast<uint32_t>(x.xpu), 0, at);
    RackFailoverRecord rec = rack_failover(boards, t, static_cast<double>(at), o);
    INFO(steps(rec.commit));
    INFO(fmt::format("{}", fmt::join(rec.problems, "; ")));
    CHECK(rec.problems.empty());
    CHECK(rec.failed == x);
    // The measurement sees the death: every end of the dead XPU's circuits left Active.
    for (const auto& y : rec.blast.allowed)
      if (!(y == rec.spare)) CHECK(std::find(rec.blast.left_active.begin(), rec.blast.left_active.end(), y) != rec.blast.left_active.end());
    std::string xpus;
    for (const auto& y : rec.blast.left_active) xpus += fmt::format("{}.{} ", y.server, y.xpu);
    int lanes = 0;
    for (int n : rec.blast.lanes_left_active) lanes += n;
    table += fmt::format("  {:<24}  {}.{}     {}.{}    {:<6}  {:<32}  {:>5}  {:>6}  {:>5}  {:>6.1f}us  {:>6.1f}us\n",
                         rec.same_server ? "spare in the same server" : "spare in another server", rec.failed.server, rec.failed.xpu,
                         rec.spare.server, rec.spare.xpu, fmt::format("{}", fmt::join(rec.blast.boards_touched, ",")), xpus, lanes,
                         rec.blast.scoreboard_errors, rec.blast.words_lost, (rec.detected_ns - rec.failure_ns) / 1000, (rec.done_ns - rec.failure_ns) / 1000);
    return rec;
  };
  // XPU 1 of server 0 dies: server 0's own spare takes its place; server 1 is not touched, and its
  // XPU facing the dead one retrains with the spare across the fibre.
  const RackFailoverRecord same = fail({0, 1});
  CHECK(same.spare == protocol::RackXpu{0, 4});
  CHECK(same.same_server);
  CHECK(same.blast.boards_touched == std::vector<int>{0});
  CHECK(same.commit.outcome == RackOutcome::Committed);
  CHECK(same.blast.words_lost == 0);
  CHECK(same.blast.scoreboard_errors == 0);
  CHECK(r.active()[1] == M0[1]);
  // The goal: no XPU outside the dead XPU's circuits' ends and the spare. The bring-up's
  // spare-ready fibres and routing leave the spare's circuits a path around every circuit that
  // stays, and the spare takes the dead XPU's fibres (before 2026-12-08: 1.1, whose fibre circuit
  // the full mesh made the router reroute; before 2026-12-06: 0.2, 1.1, 1.2, 1.3).
  CHECK(same.blast.outside().empty());
  // Then XPU 2 of server 0: no spare left there, server 1's takes it, both boards in one transaction.
  const RackFailoverRecord other = fail({0, 2});
  CHECK(other.spare == protocol::RackXpu{1, 4});
  CHECK_FALSE(other.same_server);
  CHECK(other.blast.boards_touched == std::vector<int>{0, 1});
  CHECK(other.commit.outcome == RackOutcome::Committed);
  // Nothing lost: the circuit of 0.3 and 1.2 moves to another fibre, and without the boards' links
  // held between their commits its ends trained to other XPUs' passing light and flushed what
  // they held (7 messages). Both meshes move, so XPUs outside the dead one's circuits still leave
  // Active (measured, docs/rack.md).
  CHECK(other.blast.words_lost == 0);
  CHECK(other.blast.scoreboard_errors == 0);
  // No spare left: the next death is seen and named, and nothing is placed anywhere.
  for (Board* b : boards) b->pop_events();
  const auto gens = r.generations();
  const uint64_t at = r.b0->clock().now_ns() + 5'000;
  r.b1->arm_fault(emu::FaultKind::KillXpu, 0, 0, at);
  const RackFailoverRecord none = rack_failover(boards, t, static_cast<double>(at), o);
  CHECK(none.failed == protocol::RackXpu{1, 0});
  REQUIRE(none.problems.size() == 1);
  CHECK(none.problems[0] == "server 1 XPU 0 died and no spare can take its place (none left)");
  CHECK(none.blast.boards_touched.empty());
  CHECK(r.generations() == gens);
  MESSAGE("blast radius, rack-2x1 served in lockstep:\n" << table);
}
