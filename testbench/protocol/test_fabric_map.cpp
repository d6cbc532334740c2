#include "protocol/fabric_map.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

using namespace mxtb::protocol;

namespace {
void check_involution(const ServerShape& s, const FabricMap& m) {
  for (int p = 0; p < s.mesh_ports; ++p) {
    int t = m.port_target[p];
    if (t < 0) continue;
    CHECK(m.port_target[t] == p);  // every circuit is lit both ways
    CHECK(m.expected_peer[p] == lane_of_port(s, t));
  }
}
}  // namespace

TEST_CASE("a 2x2 torus uses every lane of its four XPUs and nothing else") {
  ServerShape s;
  FabricMap m = torus_map(s, TorusPlacement{2, 2, {0, 1, 2, 3}});
  check_involution(s, m);
  for (int p = 0; p < s.mesh_ports; ++p) CHECK((m.port_target[p] >= 0) == (p < 16));
  // (0,0)'s +x lane reaches (1,0)'s -x lane; its +y lane reaches (0,1)'s -y lane.
  CHECK(m.port_target[port_of(s, {0, 0})] == port_of(s, {1, 1}));
  CHECK(m.port_target[port_of(s, {0, 2})] == port_of(s, {2, 3}));
}

TEST_CASE("substituting the spare moves exactly the failed XPU's circuits") {
  ServerShape s;
  TorusPlacement before{2, 2, {0, 1, 2, 3}};
  TorusPlacement after = substitute(before, 2, 4);
  CHECK(after.xpu_of_position == std::vector<int>{0, 1, 4, 3});
  FabricMap a = torus_map(s, before), b = torus_map(s, after);
  check_involution(s, b);
  for (int lane = 0; lane < 4; ++lane) {
    CHECK(b.port_target[port_of(s, {2, lane})] == -1);
    CHECK(b.port_target[port_of(s, {4, lane})] >= 0);
  }
  int changed = 0;
  for (int p = 0; p < s.mesh_ports; ++p) changed += a.port_target[p] != b.port_target[p];
  CHECK(changed == 12);  // XPU 2's 4 ports go dark, the spare's 4 light, its 4 peer lanes retarget
  CHECK(b.expected_peer[port_of(s, {0, 2})] == LaneId{4, 3});
}

TEST_CASE("bad placements are rejected with what was wrong") {
  ServerShape s;
  CHECK_THROWS_WITH(torus_map(s, TorusPlacement{2, 2, {0, 1, 1, 3}}), "XPU 1 is placed at two positions");
  CHECK_THROWS_WITH(torus_map(s, TorusPlacement{2, 2, {0, 1, 2, 9}}), "position 3 is placed on XPU 9, outside 0..4");
  CHECK_THROWS_WITH(torus_map(s, TorusPlacement{2, 2, {0, 1, 2}}), "torus 2 x 2 needs 4 XPUs, placement has 3");
  CHECK_THROWS_WITH(substitute(TorusPlacement{2, 2, {0, 1, 2, 3}}, 4, 2), "XPU 4 is not part of the tenant");
  CHECK_THROWS_WITH(substitute(TorusPlacement{2, 2, {0, 1, 2, 3}}, 1, 3), "spare XPU 3 is already part of the tenant");
  ServerShape two_lanes{5, 2, 32};
  CHECK_THROWS_WITH(torus_map(two_lanes, TorusPlacement{2, 2, {0, 1, 2, 3}}),
                    "a torus with 2 dimensions needs 4 lanes per XPU, the server has 2");
}

TEST_CASE("ring_map steers every lane of the ring's XPUs into the ring") {
  ServerShape s;
  for (std::vector<int> ring : {std::vector<int>{0, 1}, std::vector<int>{0, 1, 2}, std::vector<int>{3, 0, 4, 1}}) {
    CAPTURE(ring.size());
    FabricMap m = ring_map(s, ring);
    const int n = static_cast<int>(ring.size());
    std::vector<int> circuits(static_cast<size_t>(s.xpus * s.xpus), 0);
    for (int port = 0; port < s.mesh_ports; ++port) {
      int t = m.port_target[static_cast<size_t>(port)];
      LaneId a = lane_of_port(s, port);
      bool in_ring = a.xpu >= 0 && std::find(ring.begin(), ring.end(), a.xpu) != ring.end();
      CHECK((t >= 0) == in_ring);  // every lane of the ring, nothing else
      if (t < 0) continue;
      CHECK(m.port_target[static_cast<size_t>(t)] == port);
      LaneId b = lane_of_port(s, t);
      CHECK(m.expected_peer[static_cast<size_t>(port)] == b);
      ++circuits[static_cast<size_t>(a.xpu * s.xpus + b.xpu)];
    }
    // Each hop: half the lanes (two XPUs: all of them), counted from each end.
    for (int i = 0; i < n; ++i) {
      int x = ring[static_cast<size_t>(i)], y = ring[static_cast<size_t>((i + 1) % n)];
      CHECK(circuits[static_cast<size_t>(x * s.xpus + y)] == (n == 2 ? 4 : 2));
    }
  }
  CHECK_THROWS_WITH_AS(ring_map(s, {0, 0}), "XPU 0 is in the ring twice", FabricMapError);
  CHECK_THROWS_WITH_AS(ring_map(s, {1}), "a ring needs at least 2 XPUs, got 1", FabricMapError);
  CHECK_THROWS_WITH_AS(ring_map(s, {0, 7}), "ring position 1 is XPU 7, outside 0..4", FabricMapError);
}

TEST_CASE("ring_positions: a cycle through every position, each step a torus edge") {
  auto torus_neighbours = [](const TorusPlacement& t, int a, int b) {
    int ax = a % t.dim_x, ay = a / t.dim_x, bx = b % t.dim_x, by = b / t.dim_x;
    auto near = [](int d, int n) {
      const int m = ((d % n) + n) % n;
      return n > 1 && (m == 1 || m == n - 1);
    };
    return (ay == by && near(bx - ax, t.dim_x)) || (ax == bx && near(by - ay, t.dim_y));
  };
  for (auto [dx, dy] : {std::pair{2, 1}, {4, 1}, {2, 2}, {3, 2}, {2, 3}, {4, 4}}) {
    CAPTURE(dx);
    CAPTURE(dy);
    TorusPlacement t{dx, dy, {}};
    for (int p = 0; p < dx * dy; ++p) t.xpu_of_position.push_back(p);
    std::vector<int> order = ring_positions(t);
    REQUIRE(static_cast<int>(order.size()) == dx * dy);
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int p = 0; p < dx * dy; ++p) CHECK(sorted[static_cast<size_t>(p)] == p);
    for (size_t i = 0; i < order.size(); ++i) CHECK(torus_neighbours(t, order[i], order[(i + 1) % order.size()]));
  }
  CHECK(ring_xpus(TorusPlacement{2, 2, {3, 0, 2, 1}}) == std::vector<int>{3, 0, 1, 2});
  CHECK_THROWS_WITH_AS(ring_positions(TorusPlacement{3, 3, {0, 1, 2, 3, 4, 5, 6, 7, 8}}),
                       "no ring order for a 3 x 3 torus (both dimensions odd)", FabricMapError);
}
