#include "host/failover/rack_migrate.h"

#include "host/failover/restore.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace mxtb::host::failover {

namespace {

int wrap(int v, int n) { return ((v % n) + n) % n; }

// Torus position of the block's position (bx, by).
int torus_position(const protocol::RackPlacement& torus, const TorusBlock& b, int bx, int by) {
  return wrap(b.x0 + bx, torus.dim_x) + torus.dim_x * wrap(b.y0 + by, torus.dim_y);
}

bool torus_neighbours(const protocol::RackPlacement& torus, int p, int q) {
  const int dx = wrap(q % torus.dim_x - p % torus.dim_x, torus.dim_x), dy = wrap(q / torus.dim_x - p / torus.dim_x, torus.dim_y);
  return (dy == 0 && (dx == 1 || dx == torus.dim_x - 1) && dx != 0) || (dx == 0 && (dy == 1 || dy == torus.dim_y - 1) && dy != 0);
}

// The signed steps from a to b round a ring of n: the shorter way, + on a tie.
int ring_offset(int a, int b, int n) {
  const int d = wrap(b - a, n);
  return d <= n - d ? d : d - n;
}

std::string block_name(const TorusBlock& b) { return fmt::format("the {}x{} block at ({}, {})", b.dim_x, b.dim_y, b.x0, b.y0); }

}  // namespace

protocol::RackPlacement block_placement(const protocol::RackPlacement& torus, const TorusBlock& b) {
  if (b.dim_x < 1 || b.dim_y < 1 || b.dim_x > torus.dim_x || b.dim_y > torus.dim_y)
    throw protocol::RackMapError(fmt::format("{}: the static torus is {}x{}", block_name(b), torus.dim_x, torus.dim_y));
  protocol::RackPlacement p{b.dim_x, b.dim_y, {}};
  std::vector<int> at;  // torus position of each block position
  for (int by = 0; by < b.dim_y; ++by)
    for (int bx = 0; bx < b.dim_x; ++bx) {
      at.push_back(torus_position(torus, b, bx, by));
      p.xpu_of_position.push_back(torus.xpu_of_position[static_cast<size_t>(at.back())]);
    }
  const std::vector<int> ring = protocol::torus_ring_positions(b.dim_x, b.dim_y);
  for (size_t i = 0; i < ring.size(); ++i) {
    const int from = ring[i], to = ring[(i + 1) % ring.size()];
    if (!torus_neighbours(torus, at[static_cast<size_t>(from)], at[static_cast<size_t>(to)]))
      throw protocol::RackMapError(fmt::format("{}: its ring steps from block position {} to {}, not neighbours in the static {}x{} "
                                               "torus (a block with no even side must wrap the whole torus)",
                                               block_name(b), from, to, torus.dim_x, torus.dim_y));
  }
  return p;
}

TorusBlock half_block(const protocol::RackPlacement& torus) {
  if (torus.dim_x > torus.dim_y && torus.dim_x % 2 == 0) return {0, 0, torus.dim_x / 2, torus.dim_y};
  return {0, 0, torus.dim_x, torus.dim_y / 2};
}

MigrationLoad migration_load(const protocol::RackPlacement& torus, const TorusBlock& from, const TorusBlock& to) {
  MigrationLoad m;
  const int sx = ring_offset(from.x0, to.x0, torus.dim_x), sy = ring_offset(from.y0, to.y0, torus.dim_y);
  // A tie (half way round) may go either way: both ways are tried.
  std::vector<int> xs{sx}, ys{sy};
  if (sx != 0 && 2 * std::abs(sx) == torus.dim_x) xs.push_back(-sx);
  if (sy != 0 && 2 * std::abs(sy) == torus.dim_y) ys.push_back(-sy);
  std::map<std::pair<int, int>, int> flows;  // (torus position, direction 0 +x 1 -x 2 +y 3 -y) -> routes
  auto route = [&](int x, int y, int dx, int dy) {
    std::vector<std::pair<int, int>> links;
    for (int i = 0; i < std::abs(dx); ++i, x = wrap(x + (dx > 0 ? 1 : -1), torus.dim_x)) links.push_back({x + torus.dim_x * y, dx > 0 ? 0 : 1});
    for (int i = 0; i < std::abs(dy); ++i, y = wrap(y + (dy > 0 ? 1 : -1), torus.dim_y)) links.push_back({x + torus.dim_x * y, dy > 0 ? 2 : 3});
    return links;
  };
  for (int by = 0; by < from.dim_y; ++by)
    for (int bx = 0; bx < from.dim_x; ++bx) {
      const int x = wrap(from.x0 + bx, torus.dim_x), y = wrap(from.y0 + by, torus.dim_y);
      // Of the dimension-order routes, the one whose busiest link is least busy so far (then the
      // first): each rank's state takes one route, greedily spread.
      std::vector<std::pair<int, int>> best;
      int best_load = -1;
      for (int dx : xs)
        for (int dy : ys) {
          auto links = route(x, y, dx, dy);
          int load = 0;
          for (const auto& l : links) load = std::max(load, flows.count(l) ? flows[l] : 0);
          if (best_load < 0 || load < best_load) best = std::move(links), best_load = load;
        }
      for (const auto& l : best) ++flows[l];
      ++m.ranks;
    }
  m.hops = std::abs(sx) + std::abs(sy);
  m.links_used = static_cast<int>(flows.size());
  for (const auto& [link, n] : flows) m.max_link_flows = std::max(m.max_link_flows, n);
  return m;
}

double migration_state_ns(const MigrationLoad& load, uint64_t state_bytes, double lane_gbps) {
  return restore_ns(state_bytes * static_cast<uint64_t>(load.max_link_flows), 1, lane_gbps);
}

std::vector<TorusBlock> free_blocks(const protocol::RackPlacement& torus, const TorusBlock& from,
                                    const std::vector<protocol::RackXpu>& busy) {
  std::vector<std::tuple<int, int, int>> order;  // hops, y0, x0
  for (int y0 = 0; y0 < torus.dim_y; ++y0)
    for (int x0 = 0; x0 < torus.dim_x; ++x0) {
      const TorusBlock b{x0, y0, from.dim_x, from.dim_y};
      protocol::RackPlacement p;
      try {
        p = block_placement(torus, b);
      } catch (const protocol::RackMapError&) {
        continue;
      }
      const bool taken = std::any_of(p.xpu_of_position.begin(), p.xpu_of_position.end(), [&](const protocol::RackXpu& x) {
        return std::find(busy.begin(), busy.end(), x) != busy.end();
      });
      if (!taken) order.emplace_back(migration_load(torus, from, b).hops, y0, x0);
    }
  std::sort(order.begin(), order.end());
  std::vector<TorusBlock> out;
  for (const auto& [hops, y0, x0] : order) out.push_back({x0, y0, from.dim_x, from.dim_y});
  return out;
}

RackMigration rack_migrate(std::vector<fabric::Board*>& boards, const protocol::RackPlacement& torus, TorusBlock& slice,
                           double failure_ns, const RackMigrateOptions& o) {
  RackMigration m;
  m.failure_ns = failure_ns;
  m.from = slice;
  const protocol::RackPlacement placed = block_placement(torus, slice);
  RackEvents events(boards.size());
  std::vector<ScoreboardCounts> before;
  for (fabric::Board* b : boards) before.push_back(scoreboard_counts(*b));
  const fabric::JobStatus job_before = boards[0]->job_status();

  const int dead = watch_for_death(boards, o.shape, placed, o.poll_ns, o.detect_timeout_ns);
  if (dead < 0) {
    m.problems.push_back(fmt::format("no XPU of the slice lost every lane within {} us of the failure", o.detect_timeout_ns / 1000.0));
    return m;
  }
  m.detected_ns = static_cast<double>(boards[0]->clock().now_ns());
  m.failed = placed.xpu_of_position[static_cast<size_t>(dead)];
  if (o.ranks) o.ranks->kill(protocol::rack_xpu(o.shape, m.failed));
  take_events(boards, events);

  std::vector<protocol::RackXpu> busy = o.busy;
  busy.insert(busy.end(), placed.xpu_of_position.begin(), placed.xpu_of_position.end());
  const std::vector<TorusBlock> free = free_blocks(torus, slice, busy);
  if (free.empty()) {
    m.problems.push_back(fmt::format("server {} XPU {} died and the static torus has no free {}x{} block to migrate the slice to",
                                     m.failed.server, m.failed.xpu, slice.dim_x, slice.dim_y));
    return m;
  }
  m.to = free.front();
  const protocol::RackPlacement next = block_placement(torus, m.to);
  m.load = migration_load(torus, slice, m.to);
  m.state_ns = migration_state_ns(m.load, o.state_bytes, o.lane_gbps);
  m.relaunched = next.xpu_of_position;
  for (const auto* p : {&placed, &next})
    for (const auto& x : p->xpu_of_position)
      if (std::find(m.boards_touched.begin(), m.boards_touched.end(), x.server) == m.boards_touched.end()) m.boards_touched.push_back(x.server);
  std::sort(m.boards_touched.begin(), m.boards_touched.end());
  m.ring = protocol::rack_ring_xpus(o.shape, next);
  m.job.ring = m.ring;
  if (o.ranks) try {
      m.relaunch = o.ranks->reform(m.ring);
    } catch (const comm::CommError& e) {
      m.problems.push_back(fmt::format("the ranks not relaunched on rack XPUs {}: {}", fmt::join(m.ring, ","), e.what()));
    }
  m.job.first_verified_ns = form_rack_job(boards, m.ring, o.job, o.poll_ns, events, &m.job.formed_ns);
  if (m.job.first_verified_ns == 0)
    m.problems.push_back(fmt::format("the job formed again on rack XPUs {} has no verified collective within {} us",
                                     fmt::join(m.ring, ","), o.job.first_timeout_ns / 1000.0));
  take_events(boards, events);

  // The links that may leave Active: the dead XPU's own and its static-torus neighbours' lanes to it.
  const auto at = std::find(torus.xpu_of_position.begin(), torus.xpu_of_position.end(), m.failed) - torus.xpu_of_position.begin();
  m.blast.allowed = {m.failed};
  for (int n : torus_neighbour_positions(torus, static_cast<int>(at))) m.blast.allowed.push_back(torus.xpu_of_position[static_cast<size_t>(n)]);
  m.blast.boards_touched = m.boards_touched;
  std::vector<protocol::RackXpu> watched = placed.xpu_of_position;
  watched.insert(watched.end(), next.xpu_of_position.begin(), next.xpu_of_position.end());
  links_left_active(events, failure_ns, watched, o.shape.server.lanes_per_xpu, m.blast);
  add_scoreboards(boards, before, m.blast);
  const fabric::JobStatus now = boards[0]->job_status();
  m.job.aborted = now.aborted - job_before.aborted;
  m.job.wrong = now.wrong - job_before.wrong;
  m.job.in_flight = job_in_flight_end(events, failure_ns);
  if (m.job.wrong) m.problems.push_back(fmt::format("{} of the job's collectives ended wrong", m.job.wrong));
  slice = m.to;
  return m;
}

}  // namespace mxtb::host::failover
