// The migration baseline's pure parts (host/failover/rack_migrate.h): the blocks of a static
// torus, the free one a slice moves to, and how crowded its state's routes are.
#include "host/failover/rack_migrate.h"
#include "testbench/host/failover/rack_shape.h"

#include <doctest/doctest.h>

using namespace mxtb::host::failover;
namespace protocol = mxtb::protocol;
using mxtb::testbench::rack;

TEST_CASE("migration: a block of the static torus, its XPUs and its ring through neighbours only") {
  const protocol::RackPlacement torus = protocol::whole_rack_placement(rack(2, 2));  // 4x4
  const protocol::RackPlacement top = block_placement(torus, {0, 0, 4, 2});          // servers 0 and 1
  REQUIRE(top.xpu_of_position.size() == 8);
  for (const auto& x : top.xpu_of_position) CHECK(x.server < 2);
  // Wrapping: the 2x2 block at (3, 3) takes a corner XPU of every server.
  const protocol::RackPlacement corners = block_placement(torus, {3, 3, 2, 2});
  CHECK(corners.xpu_of_position == std::vector<protocol::RackXpu>{{3, 3}, {2, 2}, {1, 1}, {0, 0}});
  // A line that wraps the whole torus is a ring; one that does not has no way home.
  CHECK_NOTHROW(block_placement(torus, {0, 1, 4, 1}));
  CHECK_THROWS_WITH_AS(block_placement(torus, {0, 0, 3, 1}), doctest::Contains("not neighbours in the static 4x4 torus"),
                       protocol::RackMapError);
  CHECK_THROWS_WITH_AS(block_placement(torus, {0, 0, 3, 3}), doctest::Contains("one dimension must be even"), protocol::RackMapError);
  CHECK_THROWS_WITH_AS(block_placement(torus, {0, 0, 5, 2}), "the 5x2 block at (0, 0): the static torus is 4x4", protocol::RackMapError);
}

TEST_CASE("migration: the default slice is half the static torus, whole servers") {
  const auto half = [](int sx, int sy) { return half_block(protocol::whole_rack_placement(rack(sx, sy))); };
  const TorusBlock two = half(2, 1);  // 4x2: server 0's 2x2
  CHECK((two.dim_x == 2 && two.dim_y == 2 && two.x0 == 0 && two.y0 == 0));
  const TorusBlock four = half(2, 2);  // 4x4: servers 0 and 1
  CHECK((four.dim_x == 4 && four.dim_y == 2));
  const TorusBlock tall = half(1, 2);  // 2x4: server 0
  CHECK((tall.dim_x == 2 && tall.dim_y == 2));
}

TEST_CASE("migration: the nearest free block, and none when the torus is taken") {
  const protocol::RackPlacement torus = protocol::whole_rack_placement(rack(2, 2));
  const TorusBlock top{0, 0, 4, 2};
  std::vector<protocol::RackXpu> busy = block_placement(torus, top).xpu_of_position;
  const auto free = free_blocks(torus, top, busy);
  REQUIRE_FALSE(free.empty());
  CHECK(free.front().x0 == 0);
  CHECK(free.front().y0 == 2);
  // Every free block is clear of the busy XPUs.
  for (const auto& b : free)
    for (const auto& x : block_placement(torus, b).xpu_of_position) CHECK(std::find(busy.begin(), busy.end(), x) == busy.end());
  // Another tenant on server 3's XPU 0: no 4x2 block is free.
  busy.push_back({3, 0});
  CHECK(free_blocks(torus, top, busy).empty());
  // On two servers (a 4x2 torus) a server's 2x2 block moves to the other server's.
  const protocol::RackPlacement two = protocol::whole_rack_placement(rack(2, 1));
  const auto other = free_blocks(two, {0, 0, 2, 2}, block_placement(two, {0, 0, 2, 2}).xpu_of_position);
  REQUIRE_FALSE(other.empty());
  CHECK(other.front().x0 == 2);
  for (const auto& x : block_placement(two, other.front()).xpu_of_position) CHECK(x.server == 1);
}

TEST_CASE("migration: every rank's route over the torus, spread where both ways are as short") {
  const protocol::RackPlacement torus = protocol::whole_rack_placement(rack(2, 2));
  // Half way round in y: the 8 ranks split over +y and -y, one route a link.
  MigrationLoad m = migration_load(torus, {0, 0, 4, 2}, {0, 2, 4, 2});
  CHECK(m.ranks == 8);
  CHECK(m.hops == 2);
  CHECK(m.max_link_flows == 1);
  CHECK(m.links_used == 16);
  // One step in x, not a tie: every rank +x, each link once.
  m = migration_load(torus, {0, 0, 2, 2}, {1, 0, 2, 2});
  CHECK(m.hops == 1);
  CHECK(m.max_link_flows == 1);
  CHECK(m.links_used == 4);
  // Three steps on a ring of 4 is one step the other way.
  m = migration_load(torus, {0, 0, 1, 1}, {3, 0, 1, 1});
  CHECK(m.hops == 1);
  // A 4x1 row moved one step in y: one link each.
  m = migration_load(torus, {0, 0, 4, 1}, {0, 1, 4, 1});
  CHECK(m.max_link_flows == 1);
  // Two steps along x round a ring of 8 (four servers in a row: an 8x2 torus): routes pile up.
  const protocol::RackPlacement wide = protocol::whole_rack_placement(rack(4, 1));  // 8x2
  m = migration_load(wide, {0, 0, 4, 2}, {2, 0, 4, 2});
  CHECK(m.hops == 2);
  CHECK(m.max_link_flows == 2);  // (x, y) and (x+1, y) both cross x+1 -> x+2
  // The state's move: 4 GiB a rank, the busiest link's two one after another, at 10 Gb/s.
  CHECK(migration_state_ns(m, 4ull << 30, 10) == doctest::Approx(2.0 * (4ull << 30) * 8 / 10));
}
