// Several tenants on an emulated rack, placed by the project's allocator (host/alloc, the
// Morphlux policy; docs/rack.md, "Several tenants"). The allocator models the paper's rack: 16
// servers of 2x2 chips as a 2x2x4 torus of servers. An emulated rack of at most 2x2 servers is one
// layer of it (z = 0): emulated server (sx, sy) is the allocator's server at chips x 2sx..2sx+1,
// y 2sy..2sy+1, and chip (x, y) is XPU x%2 + 2 (y%2) of it, as the rack's own torus numbers them
// (protocol::whole_rack_placement). Every other chip of the allocator's rack is held before the
// tenants are placed, so each lands on emulated servers; an XPU beyond a server's four (XPU 4) is
// outside the allocator's server and stays a spare.
#pragma once

#include "protocol/rack_map.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace mxtb::host::failover {

struct RackTenantsError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct TenantShape {
  int dim_x = 2, dim_y = 2;
};
// "2x2,4x2": each tenant's torus, W x H, both sides 2 or more (a side of 1 leaves lanes without
// circuits, and the emulator's job waits for them to settle). RackTenantsError naming the entry.
std::vector<TenantShape> parse_tenant_shapes(const std::string& text);

struct PlacedTenants {
  std::vector<protocol::RackPlacement> tenants;  // in the order asked
  std::vector<std::string> decided_by;           // per tenant, how the allocator placed it ("ilp", "heuristic", "torus-box", ...)
};
// The tenants placed one after another by the Morphlux allocator on `shape`'s servers, then
// checked on the rack's own fibres (protocol::rack_tenants_map). RackTenantsError naming the rack
// or the tenant that does not fit.
PlacedTenants place_rack_tenants(const protocol::RackShape& shape, const std::vector<protocol::RackFibre>& wiring,
                                 const std::vector<TenantShape>& shapes);

}  // namespace mxtb::host::failover
