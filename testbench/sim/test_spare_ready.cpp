// Spare-ready fibres (sim/rack/spare_ready.h): the plan's map is the protocol's map for the same
// tenants with other fibres, every server's readiness is what its firmware's routing gives, and the
// shipped racks' bring-ups leave every substitution of a tenant XPU by its server's spare clean.
#include "firmware/routing.h"
#include "sim/rack/spare_ready.h"

#include <doctest/doctest.h>

using namespace mxtb;
using sim::rack::RackConfig;

namespace {

RackConfig rack(int sx, int sy) {
  RackConfig c;
  c.shape.servers_x = sx;
  c.shape.servers_y = sy;
  c.server.shape = c.shape.server;
  c.wiring = protocol::torus_wiring(c.shape);
  c.tenant = protocol::whole_rack_placement(c.shape);
  return c;
}

// The same circuits (lane to lane) in both maps, whatever fibres they take.
void check_same_circuits(const protocol::RackMap& a, const protocol::RackMap& b) {
  REQUIRE(a.circuits.size() == b.circuits.size());
  for (const auto& c : a.circuits) {
    const bool found = std::any_of(b.circuits.begin(), b.circuits.end(), [&](const protocol::RackCircuit& d) {
      return (d.a == c.a && d.b == c.b) || (d.a == c.b && d.b == c.a);
    });
    CHECK(found);
  }
  CHECK(a.expected_peer == b.expected_peer);
}

}  // namespace

TEST_CASE("spare-ready fibres: the shipped racks' bring-ups leave every spare substitution clean") {
  for (auto [sx, sy] : {std::pair{2, 1}, std::pair{2, 2}, std::pair{1, 1}, std::pair{4, 4}}) {
    CAPTURE(sx);
    CAPTURE(sy);
    RackConfig cfg = rack(sx, sy);
    const sim::rack::SpareReadyPlan plan = sim::rack::plan_spare_ready(cfg);
    const protocol::RackMap first = protocol::rack_tenants_map(cfg.shape, cfg.wiring, sim::rack::rack_tenants(cfg));
    MESSAGE("rack " << sx << "x" << sy << ": clean substitutions " << plan.clean_not_spare_ready << " of " << plan.substitutions
                    << " routed from phase 1's states on the first free fibres, " << plan.clean_first_fibres
                    << " routed whole the spare-ready way, " << plan.clean << " on the plan's fibres (" << plan.maps_evaluated
                    << " maps evaluated)");
    check_same_circuits(plan.map, first);
    CHECK(plan.substitutions == cfg.shape.servers() * 4);  // each server's 4 tenant XPUs by its spare
    CHECK(plan.clean == plan.substitutions);
    CHECK(plan.clean >= plan.clean_first_fibres);
    // Each server's count is its own bring-up's, and the map is one the protocol makes again from
    // its own fibres (so every later placement keeps them).
    for (int s = 0; s < cfg.shape.servers(); ++s)
      CHECK(sim::rack::bring_up_readiness(cfg.shape.server, plan.map.port_target[static_cast<size_t>(s)], true).clean ==
            plan.clean_by_server[static_cast<size_t>(s)]);
    CHECK(protocol::rack_tenants_map(cfg.shape, cfg.wiring, sim::rack::rack_tenants(cfg), &plan.map).port_target == plan.map.port_target);
    cfg.spare_ready = false;
    CHECK(sim::rack::bring_up_map(cfg).port_target == first.port_target);
    cfg.spare_ready = true;
    CHECK(sim::rack::bring_up_map(cfg).port_target == plan.map.port_target);
  }
}

TEST_CASE("spare-ready fibres: the first free fibres of rack-2x1 leave two of each server's four substitutions moving a circuit") {
  // The failure class the plan removes: on rack-2x1's first free fibres, server 0's XPUs 0 and 1
  // (and server 1's) cannot be replaced by the spare without moving a circuit through a fibre,
  // whose XPU in the other server then leaves Active (regress seeds 7401-7600: 50 such failovers).
  RackConfig cfg = rack(2, 1);
  const protocol::RackMap first = protocol::rack_tenants_map(cfg.shape, cfg.wiring, sim::rack::rack_tenants(cfg));
  for (int s = 0; s < 2; ++s) {
    const auto r = sim::rack::bring_up_readiness(cfg.shape.server, first.port_target[static_cast<size_t>(s)], false);
    CHECK(r.substitutions == 4);
    CHECK(r.clean == 2);
    // Routed whole the spare-ready way, the same fibres leave the same two: the fibres must change.
    CHECK(sim::rack::bring_up_readiness(cfg.shape.server, first.port_target[static_cast<size_t>(s)], true).clean == 2);
  }
}

TEST_CASE("spare-ready fibres: several tenants, and a rack with no spare") {
  RackConfig cfg = rack(2, 2);
  // Two 4x2 tenants on the rack's XPUs 0-3, servers 0-1 and 2-3: two of each server's four XPUs
  // each, the spares as in the whole-rack case.
  protocol::RackPlacement a{4, 2, {}}, b{4, 2, {}};
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 4; ++x) {
      a.xpu_of_position.push_back({x / 2, (x % 2) + 2 * y});
      b.xpu_of_position.push_back({2 + x / 2, (x % 2) + 2 * y});
    }
  cfg.tenant = a;
  cfg.co_tenants = {b};
  const auto plan = sim::rack::plan_spare_ready(cfg);
  MESSAGE("two tenants on rack 2x2: " << plan.clean_first_fibres << " of " << plan.substitutions << " clean on the first free fibres, "
                                      << plan.clean << " on the plan's");
  CHECK(plan.clean >= plan.clean_first_fibres);
  check_same_circuits(plan.map, protocol::rack_tenants_map(cfg.shape, cfg.wiring, sim::rack::rack_tenants(cfg)));
  // No tenant: nothing to substitute, the map empty of circuits.
  RackConfig bare = rack(2, 1);
  bare.tenant = protocol::RackPlacement{0, 0, {}};
  const auto none = sim::rack::plan_spare_ready(bare);
  CHECK(none.substitutions == 0);
  CHECK(none.map.circuits.empty());
}

TEST_CASE("spare-ready fibres: a circuit moves only to a fibre of the same length, retimers and loss") {
  RackConfig cfg = rack(2, 1);
  cfg.lines.assign(cfg.wiring.size(), sim::rack::FibreLine{});
  const auto same = sim::rack::plan_spare_ready(cfg);
  CHECK(same.clean == same.substitutions);  // every fibre alike: as without lines
  for (size_t f = 0; f < cfg.lines.size(); ++f) cfg.lines[f].metres = 2.0 + static_cast<double>(f);  // every fibre its own length
  const auto apart = sim::rack::plan_spare_ready(cfg);
  CHECK(apart.map.port_target == protocol::rack_tenants_map(cfg.shape, cfg.wiring, sim::rack::rack_tenants(cfg)).port_target);
  CHECK(apart.clean == apart.clean_first_fibres);
  CHECK(apart.clean < apart.substitutions);
}
