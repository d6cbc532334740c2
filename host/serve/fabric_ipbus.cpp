// FabricLinks over the emulated server through the fabric client (docs/serve.md).
#include "host/serve/fabric_ipbus.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "host/fabric/board.h"
#include "protocol/board_map.h"

namespace mxtb::host::serve {

namespace er = mxtb::emu::reg;
namespace reg = mxtb::ocs::reg;
using link::LinkState;

namespace {

void connect(std::vector<int>& m, int pa, int pb) {
  m[static_cast<size_t>(pa)] = pb;
  m[static_cast<size_t>(pb)] = pa;
}

// Circuits from a to b in `map`, counting only lanes that `count` accepts.
template <class F>
int circuits(const protocol::ServerShape& s, const std::vector<int>& map, int a, int b, F count) {
  int n = 0;
  for (int l = 0; l < s.lanes_per_xpu; ++l) {
    int p = a * s.lanes_per_xpu + l;
    int t = map[static_cast<size_t>(p)];
    if (t >= 0 && t < s.xpus * s.lanes_per_xpu && t / s.lanes_per_xpu == b && count(p)) ++n;
  }
  return n;
}

}  // namespace

EmulatorFabricLinks::EmulatorFabricLinks(fabric::Board& board, EmulatorFabricConfig cfg)
    : board_(board), cfg_(cfg), base_(base_map(cfg.shape)), map_(base_) {}

std::vector<int> EmulatorFabricLinks::base_map(const protocol::ServerShape& s) {
  if (s.xpus < 4 || s.lanes_per_xpu != 4 || s.mesh_ports < s.xpus * s.lanes_per_xpu)
    throw InputError(fmt::format("the serving base map is for at least 4 XPUs of 4 lanes, the server has {} x {}", s.xpus,
                                 s.lanes_per_xpu));
  std::vector<int> m(static_cast<size_t>(s.mesh_ports), -1);
  auto p = [&](int x, int l) { return protocol::port_of(s, protocol::LaneId{x, l}); };
  connect(m, p(0, 0), p(1, 0));  // the serving pair's one circuit
  connect(m, p(0, 1), p(2, 0));
  connect(m, p(0, 2), p(3, 0));
  connect(m, p(0, 3), p(3, 1));
  connect(m, p(1, 1), p(2, 1));
  connect(m, p(1, 2), p(2, 2));
  connect(m, p(1, 3), p(3, 2));
  connect(m, p(2, 3), p(3, 3));
  return m;
}

std::vector<int> EmulatorFabricLinks::with_extra(const protocol::ServerShape& s, const std::vector<int>& map, int a,
                                                 int b, int n, int* added) {
  std::vector<int> m = map;
  const int lanes = s.lanes_per_xpu;
  auto free_lane = [&](int x, int other) {
    // A lane of x whose circuit does not already go to `other`.
    for (int l = 0; l < lanes; ++l) {
      int port = x * lanes + l;
      int t = m[static_cast<size_t>(port)];
      if (t < 0 || t >= s.xpus * lanes || t / lanes != other) return port;
    }
    return -1;
  };
  int done = 0;
  for (; done < n; ++done) {
    int pa = free_lane(a, b), pb = free_lane(b, a);
    if (pa < 0 || pb < 0) break;
    int xa = m[static_cast<size_t>(pa)], xb = m[static_cast<size_t>(pb)];
    if (xa >= 0) m[static_cast<size_t>(xa)] = -1;
    if (xb >= 0) m[static_cast<size_t>(xb)] = -1;
    connect(m, pa, pb);
    // The lanes left behind keep a circuit between them when they are on two XPUs.
    if (xa >= 0 && xb >= 0 && xa != xb && xa / lanes != xb / lanes) connect(m, xa, xb);
  }
  if (added) *added = done;
  return m;
}

double EmulatorFabricLinks::commit(const std::vector<int>& map) {
  const int lanes = cfg_.shape.lanes_per_xpu;
  const int xpu_lanes = std::min(board_.links(), cfg_.shape.xpus * lanes);
  std::vector<int> moved;
  for (int p = 0; p < xpu_lanes; ++p) {
    int t = map[static_cast<size_t>(p)];
    if (t != map_[static_cast<size_t>(p)] && t >= 0 && t < xpu_lanes && t / lanes != p / lanes) moved.push_back(p);
  }
  last_.valid = false;
  board_.pop_events();  // what happened before this command is not its doing
  const uint64_t t0 = board_.clock().now_ns();
  mailbox::FwStatus st = board_.set_port_map(map);
  if (st != mailbox::FwStatus::Ok) {
    uint32_t vf = board_.client().read(protocol::controller(reg::verify_fail::kOffset));
    throw std::runtime_error(fmt::format("the firmware answered {} to the serving map (VERIFY_FAIL port {}, {:.2f} dBm)",
                                         mailbox::describe(st), vf & 0xFF,
                                         static_cast<int16_t>(vf >> 16) / 100.0));
  }
  map_ = map;
  // A moved lane is up once it has retrained: it left Active after the command and is Active again
  // (its state before the command may still read Active until the controller tells it to retrain).
  std::vector<bool> left(static_cast<size_t>(board_.links()), false);
  for (;;) {
    for (const auto& e : board_.pop_events())
      if (e.kind == emu::EmuEvent::LinkChange && e.a < left.size() && static_cast<LinkState>(e.c) != LinkState::Active)
        left[e.a] = true;
    auto ls = board_.link_status();
    ++reads_;
    std::vector<int> waiting;
    for (int p : moved)
      if (!left[static_cast<size_t>(p)] || ls[static_cast<size_t>(p)].state != LinkState::Active) waiting.push_back(p);
    if (waiting.empty()) break;
    if (board_.clock().now_ns() - t0 > cfg_.link_up_timeout_ns)
      throw std::runtime_error(fmt::format("after the serving map's commit, links {} did not retrain to Active within {} us",
                                           fmt::join(waiting, ", "), cfg_.link_up_timeout_ns / 1000.0));
    board_.run_until(er::run_until::kLinkMask, cfg_.poll_ns);
  }
  double d = static_cast<double>(board_.clock().now_ns() - t0) * 1e-9;
  delays_s_.push_back(d);
  return d;
}

double EmulatorFabricLinks::place_base() {
  // The first map after start: every circuit is new, so every mapped lane must train.
  map_.assign(base_.size(), -1);
  double d = commit(base_);
  pending_ports_.clear();
  pending_until_s_ = 0;
  return d;
}

int EmulatorFabricLinks::emulated_circuits(int xpu_a, int xpu_b) {
  const uint32_t ports = static_cast<uint32_t>(cfg_.shape.mesh_ports);
  auto active = board_.active_map(static_cast<int>(ports));
  auto ls = board_.link_status();
  ++reads_;
  return circuits(cfg_.shape, active, xpu_a, xpu_b, [&](int p) {
    return p < static_cast<int>(ls.size()) && ls[static_cast<size_t>(p)].state == LinkState::Active;
  });
}

int EmulatorFabricLinks::live_circuits(int xpu_a, int xpu_b, double now_s) const {
  if (!last_.valid || last_.a != xpu_a || last_.b != xpu_b || now_s < last_.at_s ||
      now_s - last_.at_s >= cfg_.read_every_s) {
    // board_ is a reference: reading it does not change what this object says.
    last_ = {xpu_a, xpu_b, now_s, const_cast<EmulatorFabricLinks*>(this)->emulated_circuits(xpu_a, xpu_b), true};
  }
  int n = last_.circuits;
  // The serving run's clock is its own: circuits committed at now_s carry from now_s + the measured
  // delay, although the emulator already shows them Active.
  if (now_s < pending_until_s_)
    for (int p : pending_ports_)
      if (map_[static_cast<size_t>(p)] >= 0 && map_[static_cast<size_t>(p)] / cfg_.shape.lanes_per_xpu == xpu_b) --n;
  return std::max(0, n) * cfg_.modeled_per_circuit;
}

double EmulatorFabricLinks::request_extra_circuits(int xpu_a, int xpu_b, int n, double now_s) {
  const int want = (n + cfg_.modeled_per_circuit - 1) / cfg_.modeled_per_circuit;
  int added = 0;
  auto next = with_extra(cfg_.shape, map_, xpu_a, xpu_b, want, &added);
  if (added == 0) return now_s;
  std::vector<int> before = map_;
  double d = commit(next);
  pending_ports_.clear();
  for (int l = 0; l < cfg_.shape.lanes_per_xpu; ++l) {
    int p = xpu_a * cfg_.shape.lanes_per_xpu + l;
    if (map_[static_cast<size_t>(p)] != before[static_cast<size_t>(p)]) pending_ports_.push_back(p);
  }
  pending_until_s_ = now_s + d;
  return pending_until_s_;
}

double EmulatorFabricLinks::release(int, int, double now_s) {
  pending_ports_.clear();
  if (map_ == base_) return now_s;
  return now_s + commit(base_);
}

}  // namespace mxtb::host::serve
