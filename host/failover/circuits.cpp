#include "circuits.h"

#include <algorithm>

namespace mxtb::host::failover {

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::vector<int> circuit_links(const protocol::FabricMap& m, int links) {
  std::vector<int> out;
  for (int i = 0; i < links; ++i)
    if (m.port_target[static_cast<size_t>(i)] >= 0) out.push_back(i);
  return out;
}

std::vector<int> circuits_of(const protocol::FabricMap& m, int xpu, int lanes, int links) {
  std::vector<int> out;
  for (int i = 0; i < links; ++i) {
    int t = m.port_target[static_cast<size_t>(i)];
    if (t < 0 || t / lanes == i / lanes) continue;  // unused, or a loopback
    if (i / lanes == xpu || t / lanes == xpu) out.push_back(i);
  }
  return out;
}

int circuits_between(const protocol::FabricMap& m, int a, int b, int lanes, int links) {
  int n = 0;
  for (int i = 0; i < links; ++i) {
    int t = m.port_target[static_cast<size_t>(i)];
    if (t >= 0 && i / lanes == a && t / lanes == b) ++n;
  }
  return n;
}

protocol::FabricMap live_map(protocol::FabricMap m, const std::vector<int>& failed, int lanes) {
  auto dead = [&](int port) { return contains(failed, port / lanes); };
  for (size_t i = 0; i < m.port_target.size(); ++i)
    if (m.port_target[i] >= 0 && (dead(static_cast<int>(i)) || dead(m.port_target[i]))) m.port_target[i] = -1;
  return m;
}

}  // namespace mxtb::host::failover
