// The failover tests' racks: the default server and fibres, sx x sy servers.
#pragma once

#include "protocol/rack_map.h"

namespace mxtb::testbench {

inline protocol::RackShape rack(int sx, int sy) {
  protocol::RackShape r;
  r.servers_x = sx;
  r.servers_y = sy;
  return r;
}

}  // namespace mxtb::testbench
