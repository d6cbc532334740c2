#include "host/failover/rack_tenants.h"

#include "host/alloc/alloc.h"

#include <fmt/format.h>

namespace mxtb::host::failover {

std::vector<TenantShape> parse_tenant_shapes(const std::string& text) {
  std::vector<TenantShape> out;
  size_t pos = 0;
  for (;;) {
    const size_t comma = text.find(',', pos);
    const std::string tok = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const size_t x = tok.find('x');
    auto number = [&](const std::string& s) {
      if (s.empty() || s.size() > 2 || s.find_first_not_of("0123456789") != std::string::npos)
        throw RackTenantsError(fmt::format("tenant {} '{}': expected WxH (for example 2x2)", out.size(), tok));
      return std::stoi(s);
    };
    if (x == std::string::npos) throw RackTenantsError(fmt::format("tenant {} '{}': expected WxH (for example 2x2)", out.size(), tok));
    TenantShape t{number(tok.substr(0, x)), number(tok.substr(x + 1))};
    if (t.dim_x < 2 || t.dim_y < 2)
      throw RackTenantsError(fmt::format("tenant {} {}x{}: each side at least 2 (a side of 1 leaves lanes without circuits, and its job "
                                         "never starts)",
                                         out.size(), t.dim_x, t.dim_y));
    out.push_back(t);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

PlacedTenants place_rack_tenants(const protocol::RackShape& shape, const std::vector<protocol::RackFibre>& wiring,
                                 const std::vector<TenantShape>& shapes) {
  namespace al = alloc;
  if (shape.servers_x > 2 || shape.servers_y > 2)
    throw RackTenantsError(fmt::format("a rack of {}x{} servers: the allocator places tenants on one layer of its rack, at most 2x2 servers",
                                       shape.servers_x, shape.servers_y));
  if (shape.server.xpus < al::kChipsPerServer)
    throw RackTenantsError(fmt::format("a server of {} XPUs: the allocator's server has {} chips", shape.server.xpus, al::kChipsPerServer));
  al::Datacenter dc(1, shape.fibres_per_neighbour);
  // The allocator's chips that are not the emulated rack's, held by one slice of no circuits.
  al::Slice held;
  held.kind = al::SliceKind::RackTorus;
  held.rack = 0;
  held.decided_by = "not emulated";
  for (int g = 0; g < al::kChipsPerRack; ++g) {
    const auto c = al::chip_coords(g);
    if (c[2] != 0 || c[0] / 2 >= shape.servers_x || c[1] / 2 >= shape.servers_y) held.chips.push_back(g);
  }
  held.shape = al::Shape{{1, 1, static_cast<int>(held.chips.size())}};
  held.requested = static_cast<int>(held.chips.size());
  if (!held.chips.empty()) dc.commit(held);

  al::AllocOptions ao;
  ao.policy = al::Policy::Morphlux;
  ao.fabric = al::FabricMode::Neighbour;
  // Reproducible placements: the ILP for a tenant of up to 4 XPUs (solved in milliseconds, far
  // inside its limit), the heuristic beyond (an 8-XPU ILP hits a time limit, and what it had found
  // by then depends on the machine's speed).
  ao.ilp_max_chips = 4;
  ao.ilp_time_limit_ms = 5'000;
  al::Allocator allocator(ao);
  PlacedTenants out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const TenantShape& t = shapes[i];
    const auto slice = allocator.place(dc, al::Shape{{t.dim_x, t.dim_y, 1}});
    if (!slice)
      throw RackTenantsError(fmt::format("tenant {} ({}x{}): the allocator found no place for it on the rack's {} free XPUs of its servers",
                                         i, t.dim_x, t.dim_y, dc.free_chips()));
    protocol::RackPlacement p;
    p.dim_x = t.dim_x;
    p.dim_y = t.dim_y;
    for (int g : slice->chips) {  // logical chip i + dim_x j: the placement's position
      const auto c = al::chip_coords(g % al::kChipsPerRack);
      p.xpu_of_position.push_back(protocol::RackXpu{shape.server_at(c[0] / 2, c[1] / 2), c[0] % 2 + 2 * (c[1] % 2)});
    }
    out.tenants.push_back(p);
    out.decided_by.push_back(slice->decided_by);
    dc.commit(*slice);
  }
  try {
    protocol::rack_tenants_map(shape, wiring, out.tenants);
  } catch (const protocol::RackMapError& e) {
    throw RackTenantsError(fmt::format("the allocator's placement does not fit the rack's fibres: {}", e.what()));
  }
  return out;
}

}  // namespace mxtb::host::failover
