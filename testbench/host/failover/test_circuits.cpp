#include "host/failover/circuits.h"

#include <doctest/doctest.h>

using namespace mxtb::host::failover;
using mxtb::protocol::FabricMap;

namespace {

// Three XPUs of two lanes (links 0-5) and two external ports: XPU 0 and 1 joined by lanes 0<->2,
// XPU 0 and 2 by 1<->4, XPU 1's lane 3 in loopback, XPU 2's lane 5 unused.
FabricMap small_map() {
  FabricMap m;
  m.port_target = {2, 4, 0, 3, 1, -1, -1, -1};
  return m;
}

}  // namespace

TEST_CASE("circuits: which links carry a circuit, which touch an XPU, how many join two XPUs") {
  const FabricMap m = small_map();
  CHECK(circuit_links(m, 6) == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(circuit_links(m, 2) == std::vector<int>{0, 1});          // only the first `links` ports
  CHECK(circuits_of(m, 0, 2, 6) == std::vector<int>{0, 1, 2, 4});  // its own two, and the two ending on it
  CHECK(circuits_of(m, 1, 2, 6) == std::vector<int>{0, 2});        // the loopback on lane 3 is no circuit
  CHECK(circuits_of(m, 2, 2, 6) == std::vector<int>{1, 4});
  CHECK(circuits_between(m, 0, 1, 2, 6) == 1);
  CHECK(circuits_between(m, 1, 0, 2, 6) == 1);
  CHECK(circuits_between(m, 0, 2, 2, 6) == 1);
  CHECK(circuits_between(m, 2, 1, 2, 6) == 0);
  CHECK(circuits_between(m, 1, 1, 2, 6) == 1);  // the loopback, counted as the map says
}

TEST_CASE("circuits: the live map drops every circuit touching a failed XPU and nothing else") {
  const FabricMap m = small_map();
  CHECK(live_map(m, {2}, 2).port_target == std::vector<int>{2, -1, 0, 3, -1, -1, -1, -1});
  CHECK(live_map(m, {0}, 2).port_target == std::vector<int>{-1, -1, -1, 3, -1, -1, -1, -1});
  CHECK(live_map(m, {}, 2).port_target == m.port_target);
  CHECK(contains({4, 7}, 7));
  CHECK_FALSE(contains({4, 7}, 5));
}
