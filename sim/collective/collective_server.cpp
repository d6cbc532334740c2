#include "sim/collective/collective_server.h"

#include "protocol/fabric_map.h"

namespace mxtb::sim {

std::vector<int> static_torus_map(const protocol::ServerShape& shape) {
  return protocol::torus_map(shape, protocol::TorusPlacement{2, 2, {0, 1, 2, 3}}).port_target;
}

}  // namespace mxtb::sim
