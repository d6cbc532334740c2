// The rack's collective (sim/rack/rack_collective.h): the ring order over a tenant's torus, and the
// rings over the rack's circuits, cross-server hops included.
#include "sim/rack/rack_collective.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <set>

using namespace mxtb;
using namespace mxtb::sim::rack;

namespace {

// Torus neighbours: one step in one dimension, wrapping.
bool neighbours(int a, int b, int dx, int dy) {
  const int ax = a % dx, ay = a / dx, bx = b % dx, by = b / dx;
  const int sx = std::abs(ax - bx), sy = std::abs(ay - by);
  const int wx = std::min(sx, dx - sx), wy = std::min(sy, dy - sy);
  return wx + wy == 1;
}

// Two servers side by side, the whole rack's tenant (a 4x2 torus) and its circuits.
struct TwoServers {
  protocol::RackShape shape;
  protocol::RackPlacement tenant;
  protocol::RackMap map;
  TwoServers() {
    shape.servers_x = 2;
    shape.servers_y = 1;
    tenant = protocol::whole_rack_placement(shape);
    map = protocol::rack_torus_map(shape, protocol::torus_wiring(shape), tenant);
  }
};

}  // namespace

TEST_CASE("rack collective: the ring order visits every position once, each step to a torus neighbour, and closes") {
  for (auto [dx, dy] : {std::pair{4, 2}, {4, 4}, {2, 2}, {8, 8}, {3, 4}, {4, 3}, {6, 1}, {1, 5}, {2, 3}}) {
    CAPTURE(dx);
    CAPTURE(dy);
    const std::vector<int> order = torus_ring_positions(dx, dy);
    REQUIRE(order.size() == static_cast<size_t>(dx * dy));
    CHECK(std::set<int>(order.begin(), order.end()).size() == order.size());
    for (size_t p = 0; p < order.size(); ++p) {
      const int a = order[p], b = order[(p + 1) % order.size()];
      CHECK(a >= 0);
      CHECK(a < dx * dy);
      if (dx * dy > 2) CHECK(neighbours(a, b, dx, dy));
    }
  }
}

TEST_CASE("rack collective: a torus with both dimensions odd has no such ring, and says so") {
  CHECK_THROWS_WITH_AS(torus_ring_positions(3, 3), doctest::Contains("3x3 torus through neighbours only: one dimension must be even"),
                       protocol::RackMapError);
  CHECK_THROWS_AS(torus_ring_positions(1, 1), protocol::RackMapError);
}

TEST_CASE("rack collective: rings over a 4x2 tenant on two servers cross the fibres, every hop a circuit of its two XPUs") {
  const TwoServers r;
  const auto& [shape, tenant, map] = r;
  std::vector<int> order;
  for (int p : torus_ring_positions(tenant.dim_x, tenant.dim_y))
    order.push_back(rack_xpu(shape, tenant.xpu_of_position[static_cast<size_t>(p)]));
  const std::vector<sim::Ring> rings = rack_ring_plan(shape, map, order);
  const protocol::ServerShape numbering = rack_numbering(shape);
  CHECK(numbering.xpus == 2 * shape.server.xpus);
  // One circuit a direction and dimension: the x hops have one, so one ring and its reverse.
  REQUIRE(rings.size() == 2);
  int crossing = 0;
  std::set<int> tx_links;
  for (const sim::Ring& r : rings) {
    REQUIRE(r.hops.size() == order.size());
    for (size_t p = 0; p < r.hops.size(); ++p) {
      const int from = r.order[p], to = r.order[(p + 1) % r.order.size()];
      CHECK(r.hops[p].tx_link / numbering.lanes_per_xpu == from);
      CHECK(r.hops[p].rx_link / numbering.lanes_per_xpu == to);
      CHECK(tx_links.insert(r.hops[p].tx_link).second);  // no lane carries two rings
      crossing += from / shape.server.xpus != to / shape.server.xpus;
    }
  }
  CHECK(crossing == 4);  // two hops each way leave a server
  // The spec a RingCollective is built from accepts the plan on the rack's numbering.
  sim::CollectiveSpec spec{sim::CollectiveOp::AllReduce, sim::DataType::F32, 1024, order, rings, 1, 1, sim::Algorithm::Ring};
  CHECK(sim::check_spec(spec, numbering) == "");
}

TEST_CASE("rack collective: a ring order with a hop that has no circuit is refused, naming the hop") {
  const TwoServers r;
  const auto& [shape, tenant, map] = r;
  const int a = rack_xpu(shape, tenant.xpu_of_position[0]), far = rack_xpu(shape, tenant.xpu_of_position[5]);
  const std::string want = fmt::format("no circuit from rack XPU {} to rack XPU {}", a, far);
  CHECK_THROWS_WITH_AS(rack_ring_plan(shape, map, {a, far}), doctest::Contains(want.c_str()), std::invalid_argument);
}
