// Several tenants on an emulated rack, placed by the Morphlux allocator (host/failover/rack_tenants.h):
// the shapes parsed and refused by name, every tenant on the emulated servers' XPUs 0-3, none
// sharing an XPU, their circuits fitting the rack's fibres, and what cannot be placed named.
#include "host/failover/rack_tenants.h"
#include "testbench/host/failover/rack_shape.h"

#include <doctest/doctest.h>

#include <functional>
#include <set>
#include <tuple>
#include <string>

using namespace mxtb;
using namespace mxtb::host::failover;
using mxtb::testbench::rack;

namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const RackTenantsError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("tenant shapes: WxH each, both sides at least 2, a bad one named") {
  const auto s = parse_tenant_shapes("2x2,4x2");
  REQUIRE(s.size() == 2);
  CHECK(s[1].dim_x == 4);
  CHECK(s[1].dim_y == 2);
  CHECK(error_of([] { parse_tenant_shapes("2x2,4x1"); }).find("tenant 1 4x1: each side at least 2") == 0);
  CHECK(error_of([] { parse_tenant_shapes("2x2,,2x2"); }) == "tenant 1 '': expected WxH (for example 2x2)");
  CHECK(error_of([] { parse_tenant_shapes("2by2"); }) == "tenant 0 '2by2': expected WxH (for example 2x2)");
}

TEST_CASE("the allocator places several tenants on the rack's servers, disjoint, within their fibres") {
  for (auto [sx, sy, shapes] : {std::tuple{2, 2, std::string("2x2,2x2,2x2")}, std::tuple{2, 2, std::string("4x2,2x2")},
                                std::tuple{2, 1, std::string("2x2,2x2")}, std::tuple{2, 1, std::string("4x2")}}) {
    CAPTURE(shapes);
    const protocol::RackShape r = rack(sx, sy);
    const auto wiring = protocol::torus_wiring(r);
    const PlacedTenants p = place_rack_tenants(r, wiring, parse_tenant_shapes(shapes));
    const auto wanted = parse_tenant_shapes(shapes);
    REQUIRE(p.tenants.size() == wanted.size());
    std::set<std::pair<int, int>> seen;
    for (size_t k = 0; k < p.tenants.size(); ++k) {
      CHECK(p.tenants[k].dim_x == wanted[k].dim_x);
      CHECK(p.tenants[k].xpu_of_position.size() == static_cast<size_t>(wanted[k].dim_x * wanted[k].dim_y));
      for (const auto& x : p.tenants[k].xpu_of_position) {
        CHECK(x.server >= 0);
        CHECK(x.server < r.servers());
        CHECK(x.xpu < 4);  // the allocator's four chips a server; XPU 4 stays a spare
        CHECK(seen.insert({x.server, x.xpu}).second);
      }
    }
    CHECK_NOTHROW(protocol::rack_tenants_map(r, wiring, p.tenants));
  }
}

TEST_CASE("what the allocator cannot place is named: a rack past one layer, more chips than the servers have") {
  const auto r44 = rack(4, 4);
  CHECK(error_of([&] { place_rack_tenants(r44, protocol::torus_wiring(r44), {{2, 2}}); }).find("a rack of 4x4 servers") == 0);
  const auto r21 = rack(2, 1);
  CHECK(error_of([&] { place_rack_tenants(r21, protocol::torus_wiring(r21), {{2, 2}, {2, 2}, {2, 2}}); })
            .find("tenant 2 (2x2): the allocator found no place for it") == 0);
}
