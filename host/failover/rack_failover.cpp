#include "host/failover/rack_failover.h"

#include "protocol/job_ring.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <tuple>

namespace mxtb::host::failover {

namespace {

bool contains(const std::vector<protocol::RackXpu>& v, const protocol::RackXpu& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}
void add(std::vector<protocol::RackXpu>& v, const protocol::RackXpu& x) {
  if (!contains(v, x)) v.push_back(x);
}

int server_distance(const protocol::RackShape& r, int a, int b) {
  auto axis = [](int d, int n) { return std::min(std::abs(d), n - std::abs(d)); };
  return axis(a % r.servers_x - b % r.servers_x, r.servers_x) + axis(a / r.servers_x - b / r.servers_x, r.servers_y);
}

}  // namespace

std::vector<int> torus_neighbour_positions(const protocol::RackPlacement& t, int p) {
  const int x = p % t.dim_x, y = p / t.dim_x;
  std::vector<int> out;
  for (auto [dx, dy] : {std::pair{1, 0}, {-1, 0}, {0, 1}, {0, -1}}) {
    const int n = (x + dx + t.dim_x) % t.dim_x + t.dim_x * ((y + dy + t.dim_y) % t.dim_y);
    if (n != p && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

std::vector<protocol::RackXpu> BlastRadius::outside() const {
  std::vector<protocol::RackXpu> out;
  for (const auto& x : left_active)
    if (!contains(allowed, x)) out.push_back(x);
  return out;
}

int dead_tenant_position(const protocol::RackShape& shape, const protocol::RackPlacement& p,
                         const std::vector<std::vector<bool>>& lane_active) {
  const int lanes = shape.server.lanes_per_xpu;
  for (size_t pos = 0; pos < p.xpu_of_position.size(); ++pos) {
    const protocol::RackXpu& x = p.xpu_of_position[pos];
    bool any = false;
    for (int l = 0; l < lanes; ++l) any = any || lane_active[static_cast<size_t>(x.server)][static_cast<size_t>(x.xpu * lanes + l)];
    if (!any) return static_cast<int>(pos);
  }
  return -1;
}

std::vector<protocol::RackXpu> spare_order(const protocol::RackShape& shape, const protocol::RackXpu& failed,
                                           const std::vector<protocol::RackXpu>& spares, const std::vector<protocol::RackPlacement>* others) {
  std::vector<int> others_on(static_cast<size_t>(shape.servers()), 0);  // other tenants' XPUs a server holds
  if (others)
    for (const auto& p : *others)
      for (const auto& x : p.xpu_of_position)
        if (x.server >= 0 && x.server < shape.servers()) ++others_on[static_cast<size_t>(x.server)];
  std::vector<protocol::RackXpu> out = spares;
  std::stable_sort(out.begin(), out.end(), [&](const protocol::RackXpu& a, const protocol::RackXpu& b) {
    return std::make_tuple(server_distance(shape, failed.server, a.server), others_on[static_cast<size_t>(a.server)], a.server, a.xpu) <
           std::make_tuple(server_distance(shape, failed.server, b.server), others_on[static_cast<size_t>(b.server)], b.server, b.xpu);
  });
  return out;
}

std::vector<uint32_t> circuits_moved(std::vector<fabric::Board*>& boards) {
  std::vector<uint32_t> out;
  for (fabric::Board* b : boards) out.push_back(b->report().circuits_moved);
  return out;
}

ScoreboardCounts scoreboard_counts(fabric::Board& b) { return {b.scoreboard_errors(), b.scoreboard_words_lost()}; }

void add_scoreboards(std::vector<fabric::Board*>& boards, const std::vector<ScoreboardCounts>& before, BlastRadius& b) {
  for (size_t s = 0; s < boards.size(); ++s) {
    const ScoreboardCounts now = scoreboard_counts(*boards[s]);
    b.scoreboard_errors += now.errors - before[s].errors;
    b.words_lost += now.words_lost - before[s].words_lost;
  }
}

int watch_for_death(std::vector<fabric::Board*>& boards, const protocol::RackShape& shape, const protocol::RackPlacement& p,
                    uint64_t poll_ns, uint64_t timeout_ns) {
  fabric::Board& clock_board = *boards[0];
  const uint64_t give_up = clock_board.clock().now_ns() + timeout_ns;
  for (int last = -1;;) {
    std::vector<std::vector<bool>> active(boards.size());
    for (size_t s = 0; s < boards.size(); ++s) {
      const auto st = boards[s]->link_status();
      for (int l = 0; l < shape.server.links(); ++l) active[s].push_back(st[static_cast<size_t>(l)].state == link::LinkState::Active);
    }
    const int seen = dead_tenant_position(shape, p, active);
    if (seen >= 0 && seen == last) return seen;
    last = seen;
    if (clock_board.clock().now_ns() >= give_up) return -1;
    clock_board.clock().wait_ns(poll_ns);
  }
}

void take_events(std::vector<fabric::Board*>& boards, RackEvents& events) {
  for (size_t s = 0; s < boards.size(); ++s) {
    auto e = boards[s]->pop_events();
    events[s].insert(events[s].end(), e.begin(), e.end());
  }
}

void links_left_active(const RackEvents& events, double since_ns, const std::vector<protocol::RackXpu>& watched, int lanes_per_xpu,
                       BlastRadius& b) {
  b.lanes_left_active.assign(events.size(), 0);
  for (size_t s = 0; s < events.size(); ++s)
    for (const auto& e : events[s])
      if (e.kind == emu::EmuEvent::LinkChange && static_cast<double>(e.time_ns) >= since_ns &&
          static_cast<link::LinkState>(e.b) == link::LinkState::Active) {
        const protocol::RackXpu x{static_cast<int>(s), static_cast<int>(e.a) / lanes_per_xpu};
        if (!contains(watched, x)) continue;
        ++b.lanes_left_active[s];
        add(b.left_active, x);
      }
}

namespace {

// The first spare in the host's order whose circuits the fibres can carry, and the map with it at
// `dead` (no port_target: none). Circuits that stay keep their fibres.
protocol::RackMap choose_spare(const RackTenant& t, int dead, const RackFailoverOptions& o, RackFailoverRecord& rec,
                               protocol::RackPlacement& next) {
  next = t.placement;
  for (const protocol::RackXpu& s : spare_order(o.commit.shape, rec.failed, t.spares, &t.others)) {
    next.xpu_of_position[static_cast<size_t>(dead)] = s;
    try {
      auto maps = protocol::rack_tenants_map(o.commit.shape, o.commit.wiring, t.tenants_with(next), &t.running);
      rec.spare = s;
      rec.same_server = s.server == rec.failed.server;
      rec.spare_reason += fmt::format("server {} XPU {}: {}", s.server, s.xpu,
                                      rec.same_server ? "a spare in the failing XPU's own server"
                                                      : "no spare left in that server: the nearest other server's");
      return maps;
    } catch (const protocol::RackMapError& e) {
      rec.spare_reason += fmt::format("server {} XPU {} passed over: {}; ", s.server, s.xpu, e.what());
    }
  }
  return {};
}

// Which of the tenant's XPUs' lanes (and the spare's) left Active since the failure, on every
// board, against the dead XPU's circuits' ends and the spare; the faults the boards' scoreboards
// saw and the words they lost. Idle spares are left out: their lanes, without circuits, train
// with whatever unused port their light reaches and leave Active on their own every few
// thousand cycles.
void measure_blast(std::vector<fabric::Board*>& boards, const protocol::RackPlacement& placed, const std::vector<protocol::RackPlacement>& others,
                   int dead, const RackEvents& events, const std::vector<ScoreboardCounts>& before, const protocol::RackShape& shape,
                   RackFailoverRecord& rec) {
  BlastRadius& b = rec.blast;
  b.allowed = {rec.failed, rec.spare};
  for (int n : torus_neighbour_positions(placed, dead)) add(b.allowed, placed.xpu_of_position[static_cast<size_t>(n)]);
  std::vector<protocol::RackXpu> watched = placed.xpu_of_position;
  add(watched, rec.spare);
  for (const auto& p : others)  // another tenant's XPU whose lane leaves Active is outside by definition
    for (const auto& x : p.xpu_of_position) add(watched, x);
  links_left_active(events, rec.failure_ns, watched, shape.server.lanes_per_xpu, b);
  add_scoreboards(boards, before, b);
}

// The other tenants' jobs after the path's end: each must verify a collective after it, and none
// may have aborted or gone wrong since the failure. Waits at most the job's first_timeout_ns
// (RackJob's default without a job) for each.
void check_co_tenant_jobs(std::vector<fabric::Board*>& boards, const RackFailoverOptions& o,
                          const std::vector<fabric::JobStatus>& before, RackFailoverRecord& rec) {
  fabric::Board& b = *boards[0];
  const uint64_t timeout = o.job ? o.job->first_timeout_ns : RackJob{}.first_timeout_ns;
  for (size_t i = 0; i < o.co_tenant_jobs.size(); ++i) {
    CoTenantJobFigures f;
    f.job = o.co_tenant_jobs[i];
    const uint32_t at_end = b.job_status(f.job).verified;
    const uint64_t until = b.clock().now_ns() + timeout;
    fabric::JobStatus now = b.job_status(f.job);
    while (now.verified == at_end && b.clock().now_ns() < until) {
      b.clock().wait_ns(o.poll_ns);
      now = b.job_status(f.job);
    }
    if (now.verified > at_end) f.next_verified_ns = static_cast<double>(b.clock().now_ns());
    f.verified = now.verified - before[i].verified;
    f.aborted = now.aborted - before[i].aborted;
    f.wrong = now.wrong - before[i].wrong;
    if (f.aborted || f.wrong)
      rec.problems.push_back(fmt::format("tenant {}'s job, not the failing tenant's: {} collective(s) aborted and {} wrong since the failure",
                                         f.job, f.aborted, f.wrong));
    if (f.next_verified_ns == 0)
      rec.problems.push_back(fmt::format("tenant {}'s job verified no collective within {} us of the path's end", f.job, timeout / 1000.0));
    rec.co_tenant_jobs.push_back(f);
  }
}

}  // namespace

std::vector<protocol::RackPlacement> RackTenant::tenants_with(const protocol::RackPlacement& p) const {
  std::vector<protocol::RackPlacement> all = others;
  all.insert(all.begin() + std::min<size_t>(static_cast<size_t>(std::max(index, 0)), all.size()), p);
  return all;
}

std::string job_in_flight_end(const RackEvents& events, double failure_ns, int job_index) {
  for (const auto& e : events[0])
    if (e.kind == emu::EmuEvent::Job && protocol::job_event_job(e.data) == job_index && static_cast<double>(e.time_ns) >= failure_ns &&
        static_cast<emu::JobOutcome>(e.a) != emu::JobOutcome::Verified)
      return fmt::format("collective #{} {} ({}) {:.1f} us after the failure", protocol::job_event_seq(e.data), emu::to_string(static_cast<emu::JobOutcome>(e.a)),
                         emu::to_string(static_cast<emu::JobReason>(e.b)), (static_cast<double>(e.time_ns) - failure_ns) / 1000.0);
  return "";
}

double form_rack_job(std::vector<fabric::Board*>& boards, const std::vector<int>& ring, const RackJob& job, uint64_t poll_ns,
                     RackEvents& events, double* formed_ns, int job_index) {
  // Formed first: draining the boards' events costs board time (each request runs through the
  // board's IPbus transactor), which the path should not wait for. Events from before the form
  // come in later with earlier stamps.
  fabric::Board& b = *boards[0];
  const size_t seen = events[0].size();
  const double formed = static_cast<double>(b.clock().now_ns());
  if (formed_ns) *formed_ns = formed;
  b.form_job(ring, job.spec, job_index);
  const uint64_t until = b.clock().now_ns() + job.first_timeout_ns;
  for (;;) {
    take_events(boards, events);
    for (size_t i = seen; i < events[0].size(); ++i) {
      const auto& e = events[0][i];
      if (e.kind == emu::EmuEvent::Job && protocol::job_event_job(e.data) == job_index && static_cast<double>(e.time_ns) >= formed &&
          static_cast<emu::JobOutcome>(e.a) == emu::JobOutcome::Verified)
        return static_cast<double>(e.time_ns);
    }
    if (b.clock().now_ns() >= until) return 0;
    b.clock().wait_ns(poll_ns);
  }
}

bool lanes_active(std::vector<fabric::Board*>& boards, const std::vector<std::vector<int>>& maps, int links, uint64_t ns) {
  const uint64_t until = boards[0]->clock().now_ns() + ns;
  for (;;) {
    bool all = true;
    for (size_t s = 0; s < boards.size(); ++s) {
      const auto st = boards[s]->link_status();
      for (int l = 0; l < links; ++l)
        if (maps[s][static_cast<size_t>(l)] >= 0 && st[static_cast<size_t>(l)].state != link::LinkState::Active) all = false;
    }
    if (all) return true;
    if (boards[0]->clock().now_ns() >= until) return false;
    boards[0]->clock().wait_ns(5'000);
  }
}

RackFailoverRecord rack_failover(std::vector<fabric::Board*>& boards, RackTenant& t, double failure_ns,
                                 const RackFailoverOptions& o) {
  const protocol::RackShape& shape = o.commit.shape;
  RackFailoverRecord rec;
  rec.failure_ns = failure_ns;
  RackEvents events(boards.size());
  std::vector<ScoreboardCounts> scoreboards_before;
  for (fabric::Board* b : boards) scoreboards_before.push_back(scoreboard_counts(*b));
  const fabric::JobStatus job_before = o.job ? boards[0]->job_status(t.index) : fabric::JobStatus{};
  std::vector<fabric::JobStatus> co_before;
  for (int j : o.co_tenant_jobs) co_before.push_back(boards[0]->job_status(j));
  if (o.job) rec.job = RackJobFigures{};

  const int dead = watch_for_death(boards, shape, t.placement, o.poll_ns, o.detect_timeout_ns);
  if (dead < 0) {
    rec.problems.push_back(fmt::format("no tenant XPU lost every lane within {} us of the failure", o.detect_timeout_ns / 1000.0));
    return rec;
  }
  rec.detected_ns = static_cast<double>(boards[0]->clock().now_ns());
  rec.failed = t.placement.xpu_of_position[static_cast<size_t>(dead)];
  if (o.ranks) o.ranks->kill(protocol::rack_xpu(shape, rec.failed));  // the XPU's death takes its rank's process with it
  take_events(boards, events);

  const protocol::RackPlacement placed = t.placement;  // as the failure found it
  if (t.running.port_target.empty()) t.running = protocol::rack_tenants_map(shape, o.commit.wiring, t.tenants_with(placed));
  const auto before = t.running.port_target;
  protocol::RackPlacement next;
  const protocol::RackMap next_map = choose_spare(t, dead, o, rec, next);
  const auto& after = next_map.port_target;
  if (after.empty()) {
    rec.problems.push_back(fmt::format("server {} XPU {} died and no spare can take its place{}", rec.failed.server, rec.failed.xpu,
                                       t.spares.empty() ? " (none left)" : ": " + rec.spare_reason));
    check_co_tenant_jobs(boards, o, co_before, rec);  // nothing was placed: the others must not have noticed
    return rec;
  }
  // Only the boards whose maps change take part.
  std::vector<RackBoard> part;
  for (size_t s = 0; s < boards.size(); ++s)
    if (before[s] != after[s]) {
      part.push_back(RackBoard{static_cast<int>(s), boards[s], {}, before[s], after[s]});
      if (o.reconnect) part.back().reconnect = [&o, s] { return o.reconnect(static_cast<int>(s)); };
      rec.blast.boards_touched.push_back(static_cast<int>(s));
    }
  RackCommitOptions commit = o.commit;  // a rollback need not light what the host knows is dark
  commit.dead = t.failed;
  commit.dead.push_back(rec.failed);
  rec.commit = rack_commit(part, commit);
  if (rec.commit.outcome == RackOutcome::Unresolved) {  // some board is not answering: nothing more to ask it
    rec.problems.push_back(fmt::format("the placement across boards unresolved: {}", rec.commit.why));
    t.failed.push_back(rec.failed);
    return rec;
  }
  rec.done_ns = static_cast<double>(boards[0]->clock().now_ns());
  if (rec.commit.outcome != RackOutcome::Committed)
    rec.problems.push_back(fmt::format("the placement across boards {}: {}", to_string(rec.commit.outcome), rec.commit.why));
  else {
    t.placement = next;
    t.running = next_map;
    t.spares.erase(std::find(t.spares.begin(), t.spares.end(), rec.spare));
  }
  t.failed.push_back(rec.failed);
  if (o.job && rec.commit.outcome == RackOutcome::Committed) {  // the communicator formed again with the spare
    rec.job->ring = protocol::rack_ring_xpus(shape, t.placement);
    if (o.ranks) try {
        rec.reform = o.ranks->reform(rec.job->ring);
      } catch (const comm::CommError& e) {
        rec.problems.push_back(fmt::format("the ranks' communicator not formed again on rack XPUs {}: {}", fmt::join(rec.job->ring, ","),
                                           e.what()));
      }
    rec.job->first_verified_ns = form_rack_job(boards, rec.job->ring, *o.job, o.poll_ns, events, &rec.job->formed_ns, t.index);
    if (rec.job->first_verified_ns == 0)
      rec.problems.push_back(fmt::format("the job formed again on rack XPUs {} has no verified collective within {} us",
                                         fmt::join(rec.job->ring, ","), o.job->first_timeout_ns / 1000.0));
  }
  take_events(boards, events);
  measure_blast(boards, placed, t.others, dead, events, scoreboards_before, shape, rec);
  check_co_tenant_jobs(boards, o, co_before, rec);
  if (t.circuits_moved.size() == boards.size()) {  // read after the path: it costs no path time
    const std::vector<uint32_t> now = circuits_moved(boards);
    for (size_t s = 0; s < boards.size(); ++s) rec.circuits_moved.push_back(now[s] - t.circuits_moved[s]);
    t.circuits_moved = now;
  }
  if (o.job) {
    const fabric::JobStatus now = boards[0]->job_status(t.index);
    rec.job->aborted = now.aborted - job_before.aborted;
    rec.job->wrong = now.wrong - job_before.wrong;
    rec.job->in_flight = job_in_flight_end(events, rec.failure_ns, t.index);
    if (rec.job->wrong) rec.problems.push_back(fmt::format("{} of the job's collectives ended wrong", rec.job->wrong));
  }
  return rec;
}

}  // namespace mxtb::host::failover
