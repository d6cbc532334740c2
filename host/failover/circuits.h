// The circuits of a fabric map as the failover manager reads them: which links carry one, which
// touch an XPU, how many run between two XPUs, and the map without a failed XPU's. Pure: no
// board, so every phase of the manager and its tests share one reading.
#pragma once

#include "protocol/fabric_map.h"

#include <vector>

namespace mxtb::host::failover {

bool contains(const std::vector<int>& v, int x);

// The links (of the first `links` mesh ports, one per XPU lane) that carry a circuit in `m`.
std::vector<int> circuit_links(const protocol::FabricMap& m, int links);
// Links of other XPUs whose circuit ends on `xpu`, and xpu's own circuit links (no loopbacks).
std::vector<int> circuits_of(const protocol::FabricMap& m, int xpu, int lanes, int links);
// How many circuits run from XPU `a`'s lanes to XPU `b`'s.
int circuits_between(const protocol::FabricMap& m, int a, int b, int lanes, int links);
// The map without any circuit that touches a failed XPU: its light is gone, and the controller's
// verify would refuse a commit that expects light from it.
protocol::FabricMap live_map(protocol::FabricMap m, const std::vector<int>& failed, int lanes);

}  // namespace mxtb::host::failover
