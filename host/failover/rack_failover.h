// One XPU's failover in a rack (docs/rack.md, "Failover in a rack"): the host's path over every
// board of a served rack. It sees the death on the boards' links, takes a spare (the failing
// XPU's own server first, then the nearest server whose spare the fibres reach), places the
// tenant again across the boards as one transaction (rack_commit.h: only the boards whose maps
// change take part) and measures the blast radius from every board's own events: which boards were
// touched, which XPUs' links left Active, and the words lost.
#pragma once

#include "host/comm/rank_group.h"
#include "host/fabric/board.h"
#include "host/failover/rack_commit.h"
#include "protocol/rack_map.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mxtb::host::failover {

using RackEvents = std::vector<std::vector<fabric::EmuEventRecord>>;  // every board's events, by server

// What the host knows of the rack's tenant.
struct RackTenant {
  protocol::RackPlacement placement;
  std::vector<protocol::RackXpu> spares;  // free, any server
  std::vector<protocol::RackXpu> failed;
  // The map the boards run (the host's journal); empty: the placement's fresh map on the first
  // free fibres (protocol::rack_tenants_map). A rack whose bring-up chose its fibres (a
  // spare-ready one, sim/rack/spare_ready.h) must be given its map. A failover keeps every
  // circuit that stays on its fibre.
  protocol::RackMap running;
  // A rack of several tenants (docs/rack.md, "Several tenants"): this one's place among them (its
  // job, JOB_SELECT) and the others in the rack's order. Their circuits are in every map the
  // failover places and stay as they run; their XPUs are never spares.
  int index = 0;
  std::vector<protocol::RackPlacement> others;
  // Every board's ReportWord CircuitsMoved as last read (the rack's host reads it after the
  // bring-up), so that a failover can tell which boards' meshes rearranged. Empty: not read.
  std::vector<uint32_t> circuits_moved;
  // Every tenant in the rack's order, this one as `p`.
  std::vector<protocol::RackPlacement> tenants_with(const protocol::RackPlacement& p) const;
};

struct BlastRadius {
  std::vector<int> boards_touched;                // servers whose map changed (the transaction's)
  std::vector<protocol::RackXpu> left_active;     // XPUs a lane of which left Active after the failure
  std::vector<protocol::RackXpu> allowed;         // the dead XPU's circuits' ends and the spare
  std::vector<int> lanes_left_active;             // how many lanes, by server
  uint64_t scoreboard_errors = 0;                 // since the failure, every board (SCOREBOARD_ERRORS)
  uint64_t words_lost = 0;                        // words that never arrived since, every board (SCOREBOARD_WORDS_LOST)
  // XPUs whose links left Active and are none of `allowed`.
  std::vector<protocol::RackXpu> outside() const;
};

// The tenant's job of collectives on a served rack (`mxtb rack --serve --job`): one job over the
// whole rack, formed on the tenant's ring (protocol::rack_ring_xpus) through board 0's JOB_*
// registers. With it the failover path ends at the job's first verified collective on the ring
// with the spare, as on one server.
struct RackJob {
  fabric::TenantJobRequest spec;
  // From a (re-)form to its first verified collective: 1 ms, 4x the longest of the rack campaign's
  // 202 (247 us; p50 27 us: seeds 4001-4240, 2026-12-07).
  uint64_t first_timeout_ns = 1'000'000;
};

// What another tenant's job did across one failover: the invariant of a rack of several tenants
// is none aborted, none wrong, and a verified collective after the path's end.
struct CoTenantJobFigures {
  int job = 0;                                  // the tenant's job (JOB_SELECT)
  uint32_t verified = 0, aborted = 0, wrong = 0;  // from the failure to next_verified_ns
  double next_verified_ns = 0;                  // its first collective verified after the path's end; 0: none in time
};

// What the job did across one failover.
struct RackJobFigures {
  std::vector<int> ring;             // rack XPUs in ring order, as formed again (empty: not formed again)
  double formed_ns = 0;              // the re-form (board time)
  double first_verified_ns = 0;      // the end of its first verified collective; 0: none within first_timeout_ns
  uint32_t aborted = 0, wrong = 0;   // collectives aborted and wrong from the failure to the path's end (JOB_ABORTED, JOB_WRONG)
  std::string in_flight;             // how the collective in flight at the failure ended ("" when none ended)
};

// Forms the job on `ring` and waits for its first verified collective (a collective aborted by
// the re-form itself does not count), gathering every board's events into `events` (by server)
// meanwhile. Returns the collective's end, board time; 0 when none came within the timeout.
double form_rack_job(std::vector<fabric::Board*>& boards, const std::vector<int>& ring, const RackJob& job, uint64_t poll_ns,
                     RackEvents& events, double* formed_ns = nullptr, int job_index = 0);

struct RackFailoverRecord {
  protocol::RackXpu failed, spare;
  bool same_server = false;
  std::string spare_reason;
  RackCommitResult commit;
  BlastRadius blast;
  // Board time since power-on (ns): the failure, the host seeing it, the transaction's end (every
  // board's map placed and every lane Active).
  double failure_ns = 0, detected_ns = 0, done_ns = 0;
  std::optional<RackJobFigures> job;  // with a job (RackFailoverOptions::job)
  std::vector<CoTenantJobFigures> co_tenant_jobs;  // RackFailoverOptions::co_tenant_jobs
  // Per board, the circuits that stayed in its map yet its routing moved during this failover (a
  // rearrangement of the Beneš mesh; ReportWord CircuitsMoved). Empty: not read.
  std::vector<uint32_t> circuits_moved;
  // With the job's ranks as processes (RackFailoverOptions::ranks): their communicator formed
  // again on the new ring, wall time, laid on the path before the emulator's job forms again.
  std::optional<comm::Reform> reform;
  // Where the path ends: with a job, its first verified collective on the new ring; otherwise
  // every lane of the new placement Active. 0: it did not end.
  double end_ns() const { return job ? job->first_verified_ns : done_ns; }
  // The failure to the path's end: board time, plus the ranks' re-form (wall time, while the
  // rack stood still in lockstep) laid end to end with it. 0: it did not end.
  double path_ns() const { return end_ns() > 0 ? end_ns() - failure_ns + (reform ? reform->total_s() * 1e9 : 0) : 0; }
  std::vector<std::string> problems;
};

struct RackFailoverOptions {
  RackCommitOptions commit;  // the rack's shape and wiring, the verify's timeout
  uint64_t poll_ns = 2'000;
  uint64_t detect_timeout_ns = 2'000'000;
  // A fresh client of server s after its board stopped answering (RackBoard::reconnect), which
  // also takes the place of boards[s]; empty: keep asking the old one.
  std::function<fabric::Board*(int server)> reconnect;
  std::optional<RackJob> job;  // the tenant runs one: formed again with the spare, the path ends at its first verified collective
  // The job's ranks as real processes, one per rack XPU (the spares' waiting: a hot spare): the
  // dead XPU's killed when the host sees the death, the communicator formed again on the new ring
  // once the placement is committed. Null: the emulator's job stands for them.
  comm::RankGroup* ranks = nullptr;
  // The other tenants' jobs (JOB_SELECT), each checked across the failover (CoTenantJobFigures).
  std::vector<int> co_tenant_jobs;
};

// Every board's ReportWord CircuitsMoved, by server.
std::vector<uint32_t> circuits_moved(std::vector<fabric::Board*>& boards);

// Shared by the host's rack path and the migration baseline (rack_migrate.h).
// Every board's events since the last call appended to `events`.
void take_events(std::vector<fabric::Board*>& boards, RackEvents& events);
// The XPUs among `watched` a lane of which left Active at or after `since_ns`, and how many lanes
// by server, into b.left_active and b.lanes_left_active.
void links_left_active(const RackEvents& events, double since_ns, const std::vector<protocol::RackXpu>& watched, int lanes_per_xpu,
                       BlastRadius& b);
struct ScoreboardCounts {
  uint32_t errors = 0, words_lost = 0;
};
ScoreboardCounts scoreboard_counts(fabric::Board& b);  // SCOREBOARD_ERRORS, SCOREBOARD_WORDS_LOST
// Every board's scoreboard errors and words lost since `before`, added to b.
void add_scoreboards(std::vector<fabric::Board*>& boards, const std::vector<ScoreboardCounts>& before, BlastRadius& b);
// The position of `p` whose XPU has no lane Active in two looks running, looking every poll_ns
// for at most timeout_ns of board time; -1: none.
int watch_for_death(std::vector<fabric::Board*>& boards, const protocol::RackShape& shape, const protocol::RackPlacement& p,
                    uint64_t poll_ns, uint64_t timeout_ns);

// The positions next to p in the placement's torus (each once).
std::vector<int> torus_neighbour_positions(const protocol::RackPlacement& t, int p);
// The job's collective in flight at `failure_ns`: how it ended (its first end after the failure
// that is not a verified one), from board 0's events; "" when none ended.
std::string job_in_flight_end(const RackEvents& events, double failure_ns, int job_index = 0);

// The host's looks at every board, by server, until one tenant XPU has no lane Active in two
// looks running (its neighbours lose only the lanes to it). Pure: one look's link states.
// -1: none.
int dead_tenant_position(const protocol::RackShape& shape, const protocol::RackPlacement& p,
                         const std::vector<std::vector<bool>>& lane_active);

// Whether every lane `maps` (per server: mesh input port -> output port, -1 unused) uses is Active
// on its board within `ns` of board time, looking every 5 us.
bool lanes_active(std::vector<fabric::Board*>& boards, const std::vector<std::vector<int>>& maps, int links, uint64_t ns);

// The spares in the order the host tries them for a failure on `failed`'s server: its own
// server's first, then by torus distance between servers, then (with `others`, the rack's other
// tenants) by how many of their XPUs the spare's server holds, fewest first (a spare's circuits
// can make that server's mesh rearrange, and move another tenant's circuits), then by number. Pure.
std::vector<protocol::RackXpu> spare_order(const protocol::RackShape& shape, const protocol::RackXpu& failed,
                                           const std::vector<protocol::RackXpu>& spares,
                                           const std::vector<protocol::RackPlacement>* others = nullptr);

// The failover of the XPU that dies at `failure_ns` (the caller armed it): `boards[s]` is server
// s's client; the boards' event queues were drained before the failure. `t` follows (placement,
// spares, failed). An unresolved transaction (a board that did not answer to the end) returns at
// once, its blast radius not measured and done_ns 0: the caller puts the boards back with
// rack_recover() once they answer.
RackFailoverRecord rack_failover(std::vector<fabric::Board*>& boards, RackTenant& t, double failure_ns,
                                 const RackFailoverOptions& o);

}  // namespace mxtb::host::failover
