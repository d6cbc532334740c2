// `mxtb rack-failover`: XPU deaths in a served rack, each failed over by the host's rack path
// (host/failover/rack_failover.h) and its blast radius measured (docs/rack.md, "Failover in a
// rack"). The rack runs as `mxtb rack --serve` in lockstep, a child process on loopback; the host
// reaches each server's board by its own address, as it would S boards.
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"
#include "apps/mxtb/scenario.h"
#include "apps/mxtb/served_rack.h"

#include "host/fabric/board.h"
#include "host/fabric/client.h"
#include "host/fabric/emulator_process.h"
#include "host/failover/rack_failover.h"
#include "host/failover/rack_migrate.h"
#include "host/failover/rack_tenants.h"
#include "host/failover/restore.h"
#include "host/report/report.h"
#include "protocol/board_map.h"
#include "protocol/rack_map.h"
#include "sim/collective/collective.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <thread>
#include <tuple>

namespace mxtb::app {

using nlohmann::json;
using protocol::RackXpu;

namespace {

// How long the host asks a board that stopped answering again before it is unresolved (wall
// time), in the campaign: the client's own budget is ServedRack::kSilentClientBudget.
constexpr std::chrono::milliseconds kSilentAnswerDeadline{4'000};

// "S.X": server S's XPU X, checked against the rack.
RackXpu parse_rack_xpu(const std::string& text, const protocol::RackShape& shape) {
  const auto dot = text.find('.');
  RackXpu x;
  try {
    if (dot == std::string::npos) throw std::invalid_argument("no dot");
    size_t n1 = 0, n2 = 0;
    x.server = std::stoi(text.substr(0, dot), &n1);
    x.xpu = std::stoi(text.substr(dot + 1), &n2);
    if (n1 != dot || n2 != text.size() - dot - 1) throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    throw UsageError(fmt::format("--fail '{}' is not SERVER.XPU (for example 0.1)", text));
  }
  if (x.server < 0 || x.server >= shape.servers())
    throw UsageError(fmt::format("--fail {}: server {} is not one of the rack's {} (0-{})", text, x.server, shape.servers(),
                                 shape.servers() - 1));
  if (x.xpu < 0 || x.xpu >= shape.server.xpus)
    throw UsageError(fmt::format("--fail {}: a server has XPUs 0-{}", text, shape.server.xpus - 1));
  return x;
}

// The job across a failover or migration: the collective in flight at the failure, the
// collectives aborted and wrong, the ring formed again and its first verified collective, and the
// ranks' re-form or relaunch.
json job_figures_json(const host::failover::RackJobFigures& j, double failure_ns, const std::optional<host::comm::Reform>& reform) {
  const bool formed = !j.ring.empty();
  json ranks = nullptr;
  if (reform) {
    ranks = {{"library", reform->library},
             {"restart", host::comm::to_string(reform->restart)},
             {"ranks", reform->ranks},
             {"form_ns", reform->form_s * 1e9},
             {"first_allreduce_ns", reform->first_s * 1e9},
             {"total_ns", reform->total_s() * 1e9},
             {"ranks_abort_ns", reform->abort_s * 1e9},
             {"wrong", reform->wrong}};
    if (reform->restart == host::comm::Restart::Relaunch) {
      ranks["stop_ns"] = reform->stop_s * 1e9;
      ranks["start_ns"] = reform->start_s * 1e9;
    }
  }
  return {{"in_flight", j.in_flight},
          {"collectives_aborted", j.aborted},
          {"collectives_wrong", j.wrong},
          {"ring", formed ? json(j.ring) : json(nullptr)},
          {"formed_ns", formed ? json(j.formed_ns - failure_ns) : json(nullptr)},
          {"first_collective_ns", j.first_verified_ns > 0 ? json(j.first_verified_ns - j.formed_ns) : json(nullptr)},
          {"communicator_reform", ranks}};
}
json job_json(const host::failover::RackFailoverRecord& r) { return r.job ? job_figures_json(*r.job, r.failure_ns, r.reform) : json(nullptr); }

// The failure's blast radius (null when a board did not answer to the transaction's end): what
// the record and the report's timeline both carry.
json blast_json(const host::failover::RackFailoverRecord& r) {
  if (r.commit.outcome == host::failover::RackOutcome::Unresolved) return nullptr;
  json b{{"boards_touched", r.blast.boards_touched},
         {"xpus_left_active", rack_xpu_names(r.blast.left_active)},
         {"xpus_left_active_outside_circuits", rack_xpu_names(r.blast.outside())},
         {"lanes_left_active_by_server", r.blast.lanes_left_active},
         {"scoreboard_errors", r.blast.scoreboard_errors},
         {"words_lost", r.blast.words_lost}};
  if (r.job) {
    b["collectives_aborted"] = r.job->aborted;
    b["collectives_wrong"] = r.job->wrong;
  }
  if (!r.co_tenant_jobs.empty()) {  // the other tenants' jobs: none may abort
    uint32_t aborted = 0, wrong = 0;
    json tenants = json::array();
    for (const auto& c : r.co_tenant_jobs) {
      aborted += c.aborted;
      wrong += c.wrong;
      if (c.aborted || c.wrong || c.next_verified_ns == 0) tenants.push_back(c.job);
    }
    b["other_tenants"] = r.co_tenant_jobs.size();
    b["other_tenants_collectives_aborted"] = aborted;
    b["other_tenants_collectives_wrong"] = wrong;
    b["other_tenants_disturbed"] = tenants;
  }
  return b;
}

json co_tenant_jobs_json(const host::failover::RackFailoverRecord& r) {
  json out = json::array();
  for (const auto& c : r.co_tenant_jobs)
    out.push_back({{"tenant", c.job},
                   {"verified", c.verified},
                   {"aborted", c.aborted},
                   {"wrong", c.wrong},
                   {"next_verified_after_failure_ns", c.next_verified_ns > 0 ? json(c.next_verified_ns - r.failure_ns) : json(nullptr)}});
  return out;
}

json record_json(const host::failover::RackFailoverRecord& r) {
  json steps = json::array();
  for (const auto& s : r.commit.steps)
    steps.push_back({{"server", s.server}, {"step", to_string(s.step)}, {"ns", s.end_ns - s.start_ns}, {"ok", s.ok}, {"detail", s.detail}});
  const bool placed = r.spare.server >= 0;
  return {{"failed", rack_xpu_name(r.failed)},
          {"spare", placed ? json(rack_xpu_name(r.spare)) : json(nullptr)},
          {"same_server", r.same_server},
          {"spare_reason", r.spare_reason},
          {"outcome", placed ? json(to_string(r.commit.outcome)) : json(nullptr)},
          {"why", r.commit.why},
          {"steps", steps},
          {"blast_radius", blast_json(r)},
          {"detect_ns", r.detected_ns - r.failure_ns},
          {"placed_ns", r.done_ns > 0 ? json(r.done_ns - r.failure_ns) : json(nullptr)},
          {"total_ns", r.path_ns() > 0 ? json(r.path_ns()) : json(nullptr)},
          {"job", job_json(r)},
          {"other_tenants_jobs", co_tenant_jobs_json(r)},
          // Per board, circuits that stayed yet its routing moved (ReportWord CircuitsMoved); [] unread.
          {"circuits_moved_by_server", r.circuits_moved},
          {"problems", r.problems}};
}

// --job [--job-op OP] [--job-type float|bfloat16] [--job-bytes N]: the tenant's job of collectives.
std::optional<host::failover::RackJob> job_from_flags(const Args& args) {
  for (const char* flag : {"--job-op", "--job-type", "--job-bytes", "--ranks"})
    if (args.has(flag) && !args.has("--job")) throw UsageError(fmt::format("{} describes the tenant's job: add --job", flag));
  if (!args.has("--job")) return std::nullopt;
  host::failover::RackJob job;
  // JOB_SPEC numbers the ops as sim::CollectiveOp does (scenario.cpp, failover_run).
  job.spec.op = static_cast<emu::JobOp>(
      *sim::collective_op_from_string(args.choice("--job-op", "all_reduce", {"all_reduce", "reduce_scatter", "all_gather", "alltoall"})));
  job.spec.type = *sim::data_type_from_string(args.choice("--job-type", "float", {"float", "bfloat16"})) == sim::DataType::BF16
                      ? emu::JobType::Bfloat16
                      : emu::JobType::Float;
  job.spec.bytes = static_cast<uint32_t>(args.u64("--job-bytes", job.spec.bytes, 8, 64ull << 20));
  return job;
}

std::optional<host::failover::RackJob> seed_job(const RackSeedPlan& plan) {
  if (!plan.job) return std::nullopt;
  host::failover::RackJob job;
  job.spec.op = static_cast<emu::JobOp>(plan.job_op);
  job.spec.type = plan.job_bf16 ? emu::JobType::Bfloat16 : emu::JobType::Float;
  job.spec.bytes = plan.job_bytes;
  return job;
}

// A rack timeline's start: the failure and the host seeing it (every board's LINK_STATUS).
host::report::Timeline timeline_to_detection(const std::string& scenario, uint64_t seed, double failure_ns, double detected_ns) {
  host::report::Timeline t;
  t.scenario = scenario;
  t.seed = seed;
  t.time_mode = "lockstep";
  t.failure_ns = failure_ns;
  t.phases.push_back({"detect", failure_ns, detected_ns, "host", "the host's looks at every board's LINK_STATUS until one XPU has no lane Active"});
  return t;
}

// The first failover's timeline (report.json's "failover", as mxtb regress reads it): the host
// seeing the death, then every step of the transaction in board time, each naming its board.
host::report::Timeline rack_timeline(const host::failover::RackFailoverRecord& r, const std::string& scenario, uint64_t seed) {
  using host::failover::RackStep;
  host::report::Timeline t = timeline_to_detection(scenario, seed, r.failure_ns, r.detected_ns);
  double end = r.detected_ns;
  for (const auto& s : r.commit.steps) {
    // Each step from where the last ended (the host's own time between two steps is its own).
    const double to = std::max(end, static_cast<double>(s.end_ns));
    const bool commits = s.step == RackStep::Phase1 || s.step == RackStep::Phase2 || s.step == RackStep::Rollback;
    t.phases.push_back({to_string(s.step), end, to, commits ? "firmware" : s.step == RackStep::Verify ? "rtl" : "host",
                        (s.ok ? "" : "FAILED: ") + s.detail, s.server});
    end = to;
  }
  t.hardware_ns = end - r.failure_ns;  // the transaction ends when every lane of the placement is Active
  if (r.job && r.job->first_verified_ns > 0) {  // the job formed again, its first collective on the new ring
    // The ranks' re-form ran in wall time while the rack stood still (lockstep): laid end to end
    // with the board's phases, as the single server's communicator_reform is.
    double shift = 0;
    if (r.reform) {
      shift = r.reform->total_s() * 1e9;
      t.phases.push_back({"communicator_reform", end, end + shift, "measured",
                          fmt::format("{} hot spare, {} ranks: the survivors and the waiting spare rendezvous and connect ({:.1f} ms), "
                                      "the first all-reduce checked ({:.1f} ms); wall time on this host",
                                      r.reform->library, r.reform->ranks, r.reform->form_s * 1e3, r.reform->first_s * 1e3)});
      host::report::add_beside(t, "ranks_abort", r.failure_ns, r.failure_ns + r.reform->abort_s * 1e9, "measured",
                               fmt::format("{}: the dead XPU's rank killed with it, wall time to the last survivor's step loop "
                                           "stopped (first: {})",
                                           r.reform->library, r.reform->abort_reason));
    }
    const double first_end = std::max(end, r.job->first_verified_ns) + shift;
    t.phases.push_back({"first_collective", end + shift, first_end, "rtl",
                        fmt::format("the job formed again (JOB_CTRL.form_ranks on server 0's board) and its first verified "
                                    "collective on rack XPUs {}, every element exact",
                                    fmt::join(r.job->ring, ","))});
    end = first_end;
  }
  t.total_ns = end - r.failure_ns;
  t.degraded = r.spare.server < 0;
  t.blast_radius = blast_json(r);
  if (t.degraded) t.notes.push_back("no spare: " + (r.problems.empty() ? std::string() : r.problems.front()));
  return t;
}

// The transaction's steps a plan names by number (RackSeedPlan::second_step, silent_step).
const host::failover::RackStep kPlanSteps[] = {host::failover::RackStep::Hold, host::failover::RackStep::Phase1,
                                              host::failover::RackStep::Phase2, host::failover::RackStep::Release,
                                              host::failover::RackStep::Verify};

// Where the boards' maps differ from what the rule expects: "server S input P runs Q, not R; ..."
// (the first four), "" when they agree.
std::string map_difference(const std::vector<std::vector<int>>& got, const std::vector<std::vector<int>>& want) {
  std::vector<std::string> d;
  for (size_t s = 0; s < std::min(got.size(), want.size()); ++s)
    for (size_t p = 0; p < std::min(got[s].size(), want[s].size()); ++p)
      if (got[s][p] != want[s][p]) d.push_back(fmt::format("server {} input {} runs {}, not {}", s, p, got[s][p], want[s][p]));
  if (got.size() != want.size()) d.push_back(fmt::format("{} maps, not {}", got.size(), want.size()));
  const size_t n = d.size();
  if (n > 4) d.resize(4);
  return fmt::format("{}{}", fmt::join(d, "; "), n > 4 ? fmt::format("; {} more", n - 4) : "");
}

// Every board's map as it runs (ACTIVE_MAP), by server.
std::vector<std::vector<int>> running_maps(const std::vector<host::fabric::Board*>& boards, int mesh_ports) {
  std::vector<std::vector<int>> m;
  for (auto* b : boards) m.push_back(b->active_map(mesh_ports));
  return m;
}

// Whether `step` is the plan's step or one after it: a plan's fault falls on the first step at or
// after its own that the transaction takes (a placement inside one server has no second phase:
// its first phase is the whole map).
bool at_or_after(host::failover::RackStep step, int planned) {
  const auto* it = std::find(std::begin(kPlanSteps), std::end(kPlanSteps), step);
  return it != std::end(kPlanSteps) && it - std::begin(kPlanSteps) >= planned;
}

// A board that stops answering (RackSeedPlan::silent_during): the first board of the transaction
// to reach the plan's step (or the first after it, at_or_after) has its network unplugged, and
// plugged back silent_ms later.
struct Silence {
  int server = -1;
  host::failover::RackStep at = host::failover::RackStep::Hold;  // the step it went silent before
  std::thread plug_back;
  void arm(const RackSeedPlan& plan, ServedRack& rack, host::failover::RackCommitOptions& commit) {
    commit.answer_deadline = kSilentAnswerDeadline;
    commit.before_step = [this, &plan, &rack](int s, host::failover::RackStep step) {
      if (server >= 0 || !at_or_after(step, plan.silent_step)) return;
      server = s;
      at = step;
      rack.unplug(s, true);
      plug_back = std::thread([&rack, s, ms = plan.silent_ms] {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        rack.unplug(s, false);
      });
    };
  }
  ~Silence() {
    if (plug_back.joinable()) plug_back.join();
  }
};

// An unresolved transaction whose board went silent, once it answers again: every board it
// touched back to the journal's map by rack_recover, recorded in `rj`; a recovery that does not
// roll back is a failure. The record is judged as a rollback from then on.
void recover_silent(ServedRack& rack, host::failover::RackFailoverRecord& rec, const std::vector<std::vector<int>>& journal,
                    const host::failover::RackCommitOptions& commit, const std::string& who, json& rj,
                    std::vector<std::string>& failures) {
  using host::failover::RackOutcome;
  std::vector<host::failover::RackBoard> part;
  for (int s : rec.blast.boards_touched) {
    const auto su = static_cast<size_t>(s);
    part.push_back({s, rack.boards[su], [&rack, s] { return rack.reconnect(s); }, journal[su], journal[su]});
  }
  host::failover::RackCommitOptions recovering = commit;
  recovering.dead = rack.tenant.failed;  // what the transaction could not leave out on the silent board, the recovery does
  const auto recovery = host::failover::rack_recover(part, recovering);
  rj["recovery"] = {{"outcome", to_string(recovery.outcome)}, {"why", recovery.why}, {"left_out", recovery.left_out}};
  rec.commit.left_out.insert(rec.commit.left_out.end(), recovery.left_out.begin(), recovery.left_out.end());
  if (recovery.outcome != RackOutcome::RolledBack || !recovery.unresolved.empty())
    failures.push_back(fmt::format("{}: the silent board answers again, but its recovery was {}: {}", who,
                                   to_string(recovery.outcome), recovery.why));
  rec.commit.outcome = RackOutcome::RolledBack;
}

// The seed's lane fault (RackSeedPlan::lane_fault), armed on its board at once, to fire
// lane_at_us of board time from now: a dark window or bit errors on one tenant lane.
void arm_lane_fault(const RackSeedPlan& plan, ServedRack& rack) {
  using LaneFault = RackSeedPlan::LaneFault;
  if (plan.lane_fault == LaneFault::None) return;
  const std::vector<RackXpu>& placed = rack.tenant.placement.xpu_of_position;
  const RackXpu x = placed[std::min(placed.size() - 1, static_cast<size_t>(plan.lane_xpu * static_cast<double>(placed.size())))];
  const auto link = static_cast<uint32_t>(x.xpu * rack.cfg.shape.server.lanes_per_xpu + plan.lane);
  uint32_t value = static_cast<uint32_t>(plan.lane_dark_us * 1000);
  if (plan.lane_fault == LaneFault::Ber) {
    const auto ber = static_cast<float>(plan.lane_ber);
    std::memcpy(&value, &ber, sizeof value);  // FAULT_VALUE: an IEEE-754 single
  }
  host::fabric::Board& b = *rack.boards[static_cast<size_t>(x.server)];
  b.arm_fault(plan.lane_fault == LaneFault::Dark ? emu::FaultKind::LaneDark : emu::FaultKind::LaneBer, link, value,
              b.clock().now_ns() + static_cast<uint64_t>(plan.lane_at_us * 1000));
}

// The rule of a rack of several tenants (RackSeedPlan::tenants): a failure in tenant 0 leaves every
// other tenant as it ran. Its job (with a job) aborts nothing, gets nothing wrong and verifies a
// collective after the path's end (rack_failover's CoTenantJobFigures); none of its XPUs' links
// leaves Active. Not judged when a board did not answer to the transaction's end (nothing could
// be read from it).
// One exception, named in the record (`rearranged`), never a failure: a tenant disturbed where a
// board holding its XPUs reports circuits its routing moved although they stayed in its map (the
// Beneš mesh is only rearrangeably non-blocking; ReportWord CircuitsMoved). A wrong collective or
// one never verified again is a failure whatever the mesh did.
void check_other_tenants(const ServedRack& rack, const host::failover::RackFailoverRecord& rec, const std::string& who, json& rj,
                         std::vector<std::string>& failures) {
  if (rack.tenant.others.empty() || rec.commit.outcome == host::failover::RackOutcome::Unresolved) return;
  json rearranged = json::array();
  for (size_t k = 0; k < rack.tenant.others.size(); ++k) {
    const int tenant = static_cast<int>(k) + 1;
    std::vector<std::string> left;
    for (const auto& x : rack.tenant.others[k].xpu_of_position)
      if (std::find(rec.blast.left_active.begin(), rec.blast.left_active.end(), x) != rec.blast.left_active.end()) left.push_back(rack_xpu_name(x));
    uint32_t aborted = 0;
    for (const auto& c : rec.co_tenant_jobs)
      if (c.job == tenant) {
        aborted = c.aborted;
        if (c.wrong) failures.push_back(fmt::format("{}: tenant {}'s job, beside the failing tenant: {} collective(s) wrong", who, tenant, c.wrong));
        if (c.next_verified_ns == 0) failures.push_back(fmt::format("{}: tenant {}'s job verified nothing after the path's end", who, tenant));
      }
    if (left.empty() && aborted == 0) continue;
    std::vector<int> moving;  // boards holding this tenant's XPUs whose mesh moved circuits that stayed
    for (const auto& x : rack.tenant.others[k].xpu_of_position)
      if (static_cast<size_t>(x.server) < rec.circuits_moved.size() && rec.circuits_moved[static_cast<size_t>(x.server)] > 0 &&
          std::find(moving.begin(), moving.end(), x.server) == moving.end())
        moving.push_back(x.server);
    const std::string what = fmt::format("tenant {}: {} collective(s) aborted, links of {} left Active", tenant, aborted,
                                         left.empty() ? "none of its XPUs" : fmt::format("{}", fmt::join(left, ",")));
    if (moving.empty())
      failures.push_back(fmt::format("{}: {}, with no board of it rearranging its mesh", who, what));
    else
      rearranged.push_back({{"tenant", tenant}, {"collectives_aborted", aborted}, {"xpus_left_active", left}, {"boards_rearranged", moving}});
  }
  rj["other_tenants_rearranged"] = rearranged;
}

// The rules of a committed placement: every board runs the new maps; the job formed again has a
// verified collective (unless another XPU died meanwhile, or the seed's cut fibre carries a circuit
// of the new placement: the ring has a hop with no light, before or after the failure, and the
// host's rack path does not route around cut fibres); and, with no second death, no scoreboard
// error and no word lost.
void check_committed(const RackSeedPlan& plan, const host::failover::RackFailoverRecord& rec, const protocol::RackMap& placement,
                     const std::vector<std::vector<int>>& running, bool second_died, const std::string& who,
                     std::vector<std::string>& failures) {
  if (const std::string d = map_difference(running, placement.port_target); !d.empty())
    failures.push_back(fmt::format("{}: committed, but a board runs another map: {}", who, d));
  const bool ring_cut = std::any_of(placement.circuits.begin(), placement.circuits.end(),
                                    [&](const protocol::RackCircuit& c) { return plan.cut_fibre >= 0 && c.fibre == plan.cut_fibre; });
  if (rec.job && rec.job->first_verified_ns == 0 && !second_died && !ring_cut)
    failures.push_back(fmt::format("{}: committed, but the job formed again has no verified collective: {}", who,
                                   rec.problems.empty() ? "" : rec.problems.back()));
  if (!second_died && (rec.blast.words_lost != 0 || rec.blast.scoreboard_errors != 0))
    failures.push_back(fmt::format("{}: {} scoreboard errors, {} words lost", who, rec.blast.scoreboard_errors, rec.blast.words_lost));
}

// 4 GiB of state a rank, the default failover scenario's (traces/scenarios/failover-default.json).
constexpr uint64_t kDefaultStateBytes = 4ull << 30;

// Morphlux's state, modeled: the dead XPU's alone, into the spare over its circuits (one a lane)
// from its torus neighbours, at the lanes' rate: what the rack path would restore (it restores
// nothing yet), beside the migration baseline's.
json restore_state_json(const sim::rack::RackConfig& cfg, uint64_t bytes) {
  const double gbps = protocol::lane_gbps(cfg.server.clock_mhz);
  const int circuits = cfg.shape.server.lanes_per_xpu;
  return {{"ns", host::failover::restore_ns(bytes, circuits, gbps)}, {"bytes_per_rank", bytes}, {"circuits", circuits}, {"lane_gbps", gbps},
          {"detail", "modeled: the dead XPU's state into the spare over its circuits, striped over its torus neighbours"}};
}

// `--scenario-seed N` (mxtb regress --rack): the deaths and faults the seed draws, each death
// failed over; every rule of docs/rack.md's campaign checked, each broken one a failure.
std::vector<std::string> run_seeded(const RackSeedPlan& plan, uint64_t seed, ServedRack& rack, json& records,
                                    std::optional<host::report::Timeline>& first) {
  using host::failover::RackOutcome;
  using host::failover::RackStep;
  std::vector<host::fabric::Board*>& boards = rack.boards;
  host::failover::RackTenant& tenant = rack.tenant;
  const protocol::RackShape& shape = rack.cfg.shape;
  std::vector<std::string> failures;
  // The host's journal: the maps the boards run (the bring-up's until a failover placed others).
  auto journal_now = [&]() { return tenant.running.port_target; };  // ServedRack starts it at the bring-up's map
  auto read_maps = [&]() { return running_maps(boards, shape.server.mesh_ports); };
  bool all_replaced = true, second_died = false, went_silent = false;
  arm_lane_fault(plan, rack);
  for (size_t i = 0; i < plan.pick.size(); ++i) {
    const std::vector<RackXpu> placed = tenant.placement.xpu_of_position;
    const auto journal = journal_now();
    const RackXpu victim = placed[std::min(placed.size() - 1, static_cast<size_t>(plan.pick[i] * static_cast<double>(placed.size())))];
    host::failover::RackFailoverOptions oi = rack.options;
    RackXpu second{-1, -1};
    if (static_cast<int>(i) == plan.second_during)
      oi.commit.before_step = [&](int, RackStep step) {
        if (second.server >= 0 || !at_or_after(step, plan.second_step)) return;
        std::vector<RackXpu> others;
        for (const auto& x : placed)
          if (!(x == victim)) others.push_back(x);
        second = others[std::min(others.size() - 1, static_cast<size_t>(plan.second_xpu * static_cast<double>(others.size())))];
        boards[static_cast<size_t>(second.server)]->arm_fault(emu::FaultKind::KillXpu, static_cast<uint32_t>(second.xpu), 0,
                                                              boards[0]->clock().now_ns() + plan.second_delay_ns);
      };
    Silence silence;
    if (static_cast<int>(i) == plan.silent_during) silence.arm(plan, rack, oi.commit);
    auto rec = rack.fail(victim, plan.gap_ns[i], oi);
    if (silence.plug_back.joinable()) silence.plug_back.join();
    went_silent = silence.server >= 0;
    const std::string who = fmt::format("death {} ({})", i + 1, rack_xpu_name(victim));
    json rj = record_json(rec);
    rj["killed"] = rack_xpu_name(victim);
    if (rec.spare.server >= 0) rj["state"] = restore_state_json(rack.cfg, kDefaultStateBytes);
    if (second.server >= 0) rj["killed_during_transaction"] = rack_xpu_name(second);
    if (went_silent)
      rj["silent_board"] = {{"server", silence.server}, {"step", to_string(silence.at)}, {"ms", plan.silent_ms}};
    if (rec.commit.outcome == RackOutcome::Unresolved && went_silent) recover_silent(rack, rec, journal, oi.commit, who, rj, failures);
    records.push_back(rj);
    if (!first) first = rack_timeline(rec, plan.scenario.at("name").get<std::string>(), seed);
    if (!(rec.failed == victim)) {
      failures.push_back(fmt::format("{}: the host took {} for the dead XPU", who, rec.failed.server < 0 ? "none" : rack_xpu_name(rec.failed)));
      all_replaced = false;
      break;
    }
    second_died = second.server >= 0;
    check_other_tenants(rack, rec, who, rj, failures);
    records.back() = rj;
    if (rec.spare.server < 0) {  // no spare the fibres reach: named, nothing placed anywhere
      if (const std::string d = map_difference(read_maps(), journal); !d.empty())
        failures.push_back(fmt::format("{}: no spare, yet a board's map changed: {}", who, d));
      all_replaced = false;
      break;
    }
    if (rec.job && rec.job->wrong) failures.push_back(fmt::format("{}: {} of the job's collectives ended wrong", who, rec.job->wrong));
    switch (rec.commit.outcome) {
      case RackOutcome::Committed:
        check_committed(plan, rec, tenant.running, read_maps(), second_died, who, failures);
        break;
      case RackOutcome::RolledBack:
      case RackOutcome::Refused: {
        // Not placed (a second death, a cut fibre the placement needs): every board as before,
        // but for the circuits the rollback found dark and left out.
        auto expected = journal;
        for (const auto& [server, input] : rec.commit.left_out) expected[static_cast<size_t>(server)][static_cast<size_t>(input)] = -1;
        rj["left_out"] = rec.commit.left_out;
        records.back() = rj;
        if (const std::string d = map_difference(read_maps(), expected); !d.empty())
          failures.push_back(fmt::format("{}: {} ({}), but a board's map is not the journal's ({}): half-configured", who,
                                         to_string(rec.commit.outcome), rec.commit.why, d));
        if (!second_died && plan.cut_fibre < 0 && !went_silent)
          failures.push_back(fmt::format("{}: {} with no second death and no cut fibre: {}", who, to_string(rec.commit.outcome), rec.commit.why));
        all_replaced = false;
        break;
      }
      case RackOutcome::Unresolved:
        failures.push_back(fmt::format("{}: unresolved ({}) with every board answering", who, rec.commit.why));
        all_replaced = false;
        break;
    }
    if (!all_replaced || second_died) break;  // the tenant has an XPU dead and unreplaced: the host's rack path stops here
  }
  // Every death replaced and nothing cut: every lane of the tenant's placement runs again.
  if (all_replaced && !second_died && plan.cut_fibre < 0 &&
      !host::failover::lanes_active(boards, journal_now(), shape.server.links(), 1'000'000))
    failures.push_back("the tenant's lanes are not all Active 1 ms after the last failover");
  return failures;
}

// One seed of the campaign: its deaths failed over, a line each, its rules' failures, and its JSON
// (the first failover's timeline as report.json's). Exit 0 when no rule broke.
int run_seed(const RackSeedPlan& plan, uint64_t seed, const std::string& path, const std::string& json_path, ServedRack& rack) {
  const protocol::RackShape& shape = rack.cfg.shape;
  const sim::rack::RackConfig& cfg = rack.cfg;
  json records = json::array();
  std::optional<host::report::Timeline> first;
  const auto failures = run_seeded(plan, seed, rack, records, first);
  for (const auto& r : records) {
    const json& blast = r["blast_radius"];
    fmt::print("  killed {}{}{}: spare {}, {}{}; {}{}\n", r["killed"].get<std::string>(),
               r.contains("killed_during_transaction") ? " (and " + r["killed_during_transaction"].get<std::string>() + " during its transaction)" : "",
               r.contains("silent_board") ? fmt::format(" (server {} silent {} ms from its {})", r["silent_board"]["server"].get<int>(),
                                                        r["silent_board"]["ms"].get<uint64_t>(), r["silent_board"]["step"].get<std::string>())
                                          : "",
               r["spare"].is_null() ? "none" : r["spare"].get<std::string>(), r["outcome"].is_null() ? "nothing placed" : r["outcome"].get<std::string>(),
               r.contains("recovery") ? ", recovered: " + r["recovery"]["outcome"].get<std::string>() : "",
               blast.is_null() ? "blast radius not measured (a board did not answer)"
                               : fmt::format("boards {}; {} errors, {} words lost{}", blast["boards_touched"].dump(),
                                             blast["scoreboard_errors"].get<uint64_t>(), blast["words_lost"].get<uint64_t>(),
                                             r["job"].is_null() ? ""
                                             : r["job"]["first_collective_ns"].is_null()
                                                 ? "; job: no verified collective on the new ring"
                                                 : fmt::format("; job: first collective {:.1f} us after its re-form",
                                                               r["job"]["first_collective_ns"].get<double>() / 1000)),
               r["problems"].empty() ? "" : "; " + r["problems"][0].get<std::string>());
  }
  for (const auto& f : failures) fmt::print("  FAILURE: {}\n", f);
  json plan_json{{"rack", plan.base}, {"tenants", plan.tenants.empty() ? json(nullptr) : json(plan.tenants)}, {"deaths", plan.pick.size()}, {"cut_fibre", plan.cut_fibre}, {"cut_at_us", plan.cut_at_us},
                 {"second_during", plan.second_during}, {"silent_during", plan.silent_during}, {"silent_ms", plan.silent_ms},
                 {"lane_fault", plan.lane_fault == RackSeedPlan::LaneFault::None
                                    ? json(nullptr)
                                    : json{{"kind", plan.lane_fault == RackSeedPlan::LaneFault::Dark ? "dark" : "ber"},
                                           {"xpu_fraction", plan.lane_xpu},
                                           {"lane", plan.lane},
                                           {"at_us", plan.lane_at_us},
                                           {"dark_us", plan.lane_dark_us},
                                           {"ber", plan.lane_ber}}},
                 {"job", plan.job ? json{{"op", emu::to_string(static_cast<emu::JobOp>(plan.job_op))},
                                         {"type", plan.job_bf16 ? "bfloat16" : "float"},
                                         {"bytes", plan.job_bytes}}
                                  : json(nullptr)}};
  json report{{"scenario", path}, {"rack", cfg.name}, {"servers", shape.servers()}, {"seed", seed}, {"plan", plan_json},
              {"failovers", records}, {"failures", failures}};
  if (first) report["report"] = host::report::to_json(*first);
  std::ofstream f(json_path);
  if (!(f << report.dump(2) << "\n")) throw InputError(fmt::format("cannot write {}", json_path));
  fmt::print("# wrote {}\n{}\n", json_path, failures.empty() ? "PASS" : "FAIL");
  return failures.empty() ? 0 : 1;
}

// ---- The migration baseline (host/failover/rack_migrate.h) ----

using host::failover::TorusBlock;

std::string block_text(const TorusBlock& b) { return fmt::format("{}x{}@{},{}", b.dim_x, b.dim_y, b.x0, b.y0); }

// --slice WxH[@X,Y]: a block of the static torus (default corner 0,0), checked against it.
TorusBlock parse_slice(const std::string& text, const protocol::RackPlacement& torus) {
  static const std::regex form(R"((\d{1,3})x(\d{1,3})(?:@(\d{1,3}),(\d{1,3}))?)");
  std::smatch m;
  if (!std::regex_match(text, m, form))
    throw UsageError(fmt::format("--slice '{}' is not WxH or WxH@X,Y (for example 4x2 or 2x2@2,0)", text));
  TorusBlock b{m[3].matched ? std::stoi(m[3]) : 0, m[4].matched ? std::stoi(m[4]) : 0, std::stoi(m[1]), std::stoi(m[2])};
  if (b.x0 < 0 || b.y0 < 0 || b.x0 >= torus.dim_x || b.y0 >= torus.dim_y)
    throw UsageError(fmt::format("--slice {}: the corner ({}, {}) is outside the static {}x{} torus", text, b.x0, b.y0, torus.dim_x, torus.dim_y));
  try {
    host::failover::block_placement(torus, b);
  } catch (const protocol::RackMapError& e) {
    throw UsageError(fmt::format("--slice {}: {}", text, e.what()));
  }
  return b;
}

json block_json(const TorusBlock& b) {
  if (b.dim_x == 0) return nullptr;
  return {{"x0", b.x0}, {"y0", b.y0}, {"dim_x", b.dim_x}, {"dim_y", b.dim_y}};
}

// The migration as a record of the same shape as a failover's (record_json), so that the campaign's
// blast radius reads both: "baseline" names it, "outcome" is "migrated" (null: no free block).
json migration_json(const host::failover::RackMigration& m, uint64_t state_bytes, double lane_gbps) {
  const bool moved = m.to.dim_x > 0;
  json blast{{"boards_touched", m.boards_touched},
             {"xpus_left_active", rack_xpu_names(m.blast.left_active)},
             {"xpus_left_active_outside_circuits", rack_xpu_names(m.blast.outside())},
             {"lanes_left_active_by_server", m.blast.lanes_left_active},
             {"ranks_relaunched", m.relaunched.size()},
             {"scoreboard_errors", m.blast.scoreboard_errors},
             {"words_lost", m.blast.words_lost},
             {"collectives_aborted", m.job.aborted},
             {"collectives_wrong", m.job.wrong}};
  return {{"baseline", "migration"},
          {"failed", rack_xpu_name(m.failed)},
          {"spare", nullptr},
          {"from", block_json(m.from)},
          {"to", block_json(m.to)},
          {"outcome", moved ? json("migrated") : json(nullptr)},
          {"blast_radius", blast},
          {"detect_ns", m.detected_ns - m.failure_ns},
          {"placed_ns", nullptr},
          {"total_ns", m.path_ns() > 0 ? json(m.path_ns()) : json(nullptr)},
          {"state", {{"ns", m.state_ns},
                     {"bytes_per_rank", state_bytes},
                     {"lane_gbps", lane_gbps},
                     {"hops", m.load.hops},
                     {"max_link_flows", m.load.max_link_flows},
                     {"links_used", m.load.links_used},
                     {"detail", "modeled: every rank's state over the static torus's circuits, one route a rank, the busiest "
                                "link's routes one after another at the lanes' rate"}}},
          {"job", job_figures_json(m.job, m.failure_ns, m.relaunch)},
          {"problems", m.problems}};
}

// The migration's timeline (report.json's "failover", as mxtb regress reads it): the host seeing
// the death, the ranks relaunched on the new block (with ranks: wall time, the rack standing still
// in lockstep), the job formed there and its first verified collective; the state's move beside
// the path (modeled, not emulated). No fabric phase: a static torus changes no circuit.
host::report::Timeline migration_timeline(const host::failover::RackMigration& m, const json& record, const std::string& scenario,
                                          uint64_t seed) {
  host::report::Timeline t = timeline_to_detection(scenario, seed, m.failure_ns, m.detected_ns);
  double end = m.detected_ns, shift = 0;
  if (m.relaunch) {
    shift = m.relaunch->total_s() * 1e9;
    t.phases.push_back({"ranks_relaunch", end, end + shift, "measured",
                        fmt::format("{} ranks of {} stopped and started on the new block from their checkpoints, rendezvous and "
                                    "connections from scratch, the first all-reduce checked; wall time on this host",
                                    m.relaunch->ranks, m.relaunch->library)});
    end += shift;
  }
  if (m.job.first_verified_ns > 0) {
    const double first_end = std::max(m.detected_ns, m.job.first_verified_ns) + shift;
    t.phases.push_back({"first_collective", end, first_end, "rtl",
                        fmt::format("the job formed on the new block {} (JOB_CTRL.form_ranks on server 0's board) and its first "
                                    "verified collective on rack XPUs {}, every element exact",
                                    block_text(m.to), fmt::join(m.ring, ","))});
    end = first_end;
  }
  host::report::add_beside(t, "state_move", m.detected_ns, m.detected_ns + m.state_ns, "modeled",
                           record["state"]["detail"].get<std::string>() +
                               fmt::format(" ({} ranks, {} hops, {} routes on the busiest link)", m.load.ranks, m.load.hops,
                                           m.load.max_link_flows));
  t.total_ns = end - m.failure_ns;
  // The new block's circuits were up before the failure: the hardware is ready once the host knows.
  t.hardware_ns = m.detected_ns - m.failure_ns;
  t.notes.push_back("a static torus: no circuit changes, the new block's were up before the failure (hardware_ns is the detection)");
  t.degraded = m.to.dim_x == 0;
  t.blast_radius = record["blast_radius"];
  if (t.degraded) t.notes.push_back("no free block: " + (m.problems.empty() ? std::string() : m.problems.front()));
  return t;
}

// The campaign's migration seed (RackSeedPlan::migrate): one death in the slice, migrated; the
// baseline's rules: the job's first verified collective on the new block, nothing lost or wrong,
// no link outside the dead XPU's own circuits left Active, no board's map changed.
int run_migration_seed(const RackSeedPlan& plan, uint64_t seed, const std::string& path, const std::string& json_path,
                       const sim::rack::RackConfig& cfg, const std::string& calibration, const std::string& out,
                       const host::failover::RackJob& job) {
  const TorusBlock slice{plan.slice_x0, plan.slice_y0, plan.slice_dx, plan.slice_dy};
  StaticTorus st(cfg, path, calibration, out, slice, job, false, kDefaultStateBytes);
  auto read_maps = [&]() { return running_maps(st.boards(), cfg.shape.server.mesh_ports); };
  const auto maps_before = read_maps();
  const auto placed = host::failover::block_placement(st.torus, slice).xpu_of_position;
  const RackXpu victim = placed[std::min(placed.size() - 1, static_cast<size_t>(plan.pick[0] * static_cast<double>(placed.size())))];
  const auto m = st.fail(victim, plan.gap_ns[0]);
  std::vector<std::string> failures;
  const std::string who = fmt::format("death 1 ({})", rack_xpu_name(victim));
  if (!(m.failed == victim)) failures.push_back(fmt::format("{}: the host took {} for the dead XPU", who, rack_xpu_name(m.failed)));
  for (const auto& p : m.problems) failures.push_back(fmt::format("{}: {}", who, p));
  if (m.blast.words_lost || m.blast.scoreboard_errors)
    failures.push_back(fmt::format("{}: {} scoreboard errors, {} words lost", who, m.blast.scoreboard_errors, m.blast.words_lost));
  if (!m.blast.outside().empty())
    failures.push_back(fmt::format("{}: links left Active outside the dead XPU's circuits: {}", who,
                                   fmt::join(rack_xpu_names(m.blast.outside()), ",")));
  if (const std::string d = map_difference(read_maps(), maps_before); !d.empty())
    failures.push_back(fmt::format("{}: a static torus, yet a board's map changed: {}", who, d));
  json rec = migration_json(m, kDefaultStateBytes, st.options.lane_gbps);
  rec["killed"] = rack_xpu_name(victim);
  fmt::print("  killed {}: slice {} migrated to {}; boards {}; {} ranks relaunched; {} errors, {} words lost; job: {}\n",
             rack_xpu_name(victim), block_text(slice), m.to.dim_x ? block_text(m.to) : "nowhere", rec["blast_radius"]["boards_touched"].dump(),
             m.relaunched.size(), m.blast.scoreboard_errors, m.blast.words_lost,
             m.job.first_verified_ns > 0 ? fmt::format("first collective {:.1f} us after its re-form", (m.job.first_verified_ns - m.job.formed_ns) / 1e3)
                                         : "no verified collective on the new block");
  for (const auto& f : failures) fmt::print("  FAILURE: {}\n", f);
  json report{{"scenario", path}, {"rack", cfg.name}, {"servers", cfg.shape.servers()}, {"seed", seed},
              {"plan", {{"rack", plan.base}, {"migrate", true}, {"slice", block_json(slice)}, {"deaths", 1}}},
              {"failovers", json::array({rec})}, {"failures", failures}};
  report["report"] = host::report::to_json(migration_timeline(m, rec, plan.scenario.at("name").get<std::string>(), seed));
  std::ofstream f(json_path);
  if (!(f << report.dump(2) << "\n")) throw InputError(fmt::format("cannot write {}", json_path));
  fmt::print("# wrote {}\n{}\n", json_path, failures.empty() ? "PASS" : "FAIL");
  return failures.empty() ? 0 : 1;
}

// --migrate: the same death on the same rack, twice. Morphlux: the slice is the tenant, its own
// torus of circuits, every other XPU a spare. The baseline: the rack's circuits its bring-up's
// torus, left as they are, the job on the slice; the slice migrated. Both rows and their ratio.
int run_migration_compare(const Args& args, const std::string& path, const std::string& calibration, const std::string& out,
                          const std::string& json_path, const std::optional<host::failover::RackJob>& job, const std::vector<RackXpu>& deaths) {
  if (!job) throw UsageError("--migrate ends each path at the job's first verified collective: add --job");
  if (deaths.size() != 1) throw UsageError("--migrate fails one XPU: give one --fail S.X");
  json file = read_rack_file(path);
  const sim::rack::RackConfig cfg = parse_rack_scenario(file, path, calibration);
  const protocol::RackPlacement& torus = cfg.tenant;
  const TorusBlock slice = args.has("--slice") ? parse_slice(args.str("--slice", ""), torus) : host::failover::half_block(torus);
  // A tenant torus with a side of 1 leaves two lanes of each XPU without a circuit; they keep
  // training with stray light, and the emulator's job waits for every lane of its XPUs to settle
  // (sim/collective/tenant_job.cpp): its job would never start.
  if (slice.dim_x == 1 || slice.dim_y == 1)
    throw UsageError(fmt::format("--slice {}: as Morphlux's tenant, a torus with a side of 1 leaves lanes without circuits and its "
                                 "job never starts; take a slice at least 2 on each side",
                                 block_text(slice)));
  const protocol::RackPlacement slice_xpus = host::failover::block_placement(torus, slice);
  const RackXpu victim = deaths.front();
  if (std::find(slice_xpus.xpu_of_position.begin(), slice_xpus.xpu_of_position.end(), victim) == slice_xpus.xpu_of_position.end())
    throw UsageError(fmt::format("--fail {}: not an XPU of the slice {} ({})", rack_xpu_name(victim), block_text(slice),
                                 fmt::join(rack_xpu_names(slice_xpus.xpu_of_position), ",")));
  file["tenant"] = rack_placement_json(slice_xpus);
  const sim::rack::RackConfig morphlux_cfg = parse_rack_scenario(file, path + " with the slice as its tenant", calibration);
  const uint64_t state_bytes = args.u64("--state-bytes", kDefaultStateBytes, 0, uint64_t{1} << 40);
  const double gbps = protocol::lane_gbps(cfg.server.clock_mhz);
  const bool ranks = args.has("--ranks");
  // Everything checked: nothing is written before.
  const std::string mdir = out + "/morphlux", sdir = out + "/static-torus";
  std::filesystem::create_directories(mdir);
  std::filesystem::create_directories(sdir);
  {
    std::ofstream f(mdir + "/scenario.json");
    if (!(f << file.dump(2) << "\n")) throw InputError(fmt::format("cannot write {}/scenario.json", mdir));
  }
  fmt::print("# {} ({} servers): the slice {} of the static {}x{} torus (XPUs {}), {} dies; state {} GiB a rank at {} Gb/s (modeled)\n",
             cfg.name, cfg.shape.servers(), block_text(slice), torus.dim_x, torus.dim_y, fmt::join(rack_xpu_names(slice_xpus.xpu_of_position), ","),
             rack_xpu_name(victim), static_cast<double>(state_bytes) / (1ull << 30), gbps);
  host::failover::RackFailoverRecord rec;
  {
    ServedRack::Options so;
    so.job = job;
    so.ranks = ranks;
    ServedRack morphlux(morphlux_cfg, mdir + "/scenario.json", calibration, mdir, so);
    rec = morphlux.fail(victim);
  }
  host::failover::RackMigration m;
  {
    StaticTorus st(cfg, path, calibration, sdir, slice, *job, ranks, state_bytes);
    m = st.fail(victim);
  }
  json mj = record_json(rec);
  mj["state"] = restore_state_json(cfg, state_bytes);
  const double morphlux_state_ns = mj["state"]["ns"].get<double>();
  const json sj = migration_json(m, state_bytes, gbps);
  fmt::print("#  case                            boards    ranks started  links left Active  aborted  lost  detect(us)  path(ms)  ranks(ms)  "
             "state(ms, modeled)  total(ms)\n");
  auto row = [&](const std::string& name, const std::vector<int>& boards, size_t started, size_t left, uint32_t aborted, uint64_t lost,
                 double detect_ns, double path_ns, double ranks_ns, double state_ns) {
    fmt::print("  {:<32} {:<9} {:>13} {:>18} {:>8} {:>5} {:>11.1f} {:>9} {:>10} {:>19.1f} {:>10}\n", name, fmt::format("{}", fmt::join(boards, ",")),
               started, left, aborted, lost, detect_ns / 1e3, path_ns > 0 ? fmt::format("{:.3f}", path_ns / 1e6) : "-",
               ranks_ns > 0 ? fmt::format("{:.1f}", ranks_ns / 1e6) : "-", state_ns / 1e6,
               path_ns > 0 ? fmt::format("{:.1f}", (path_ns + state_ns) / 1e6) : "-");
  };
  const bool placed = rec.spare.server >= 0;
  row(!placed ? "Morphlux: no spare" : rec.same_server ? "Morphlux: spare in the same server" : "Morphlux: spare in another server",
      rec.blast.boards_touched, placed ? 1 : 0, rec.blast.left_active.size(), rec.job ? rec.job->aborted : 0, rec.blast.words_lost,
      rec.detected_ns - rec.failure_ns, rec.path_ns(), rec.reform ? rec.reform->total_s() * 1e9 : 0, morphlux_state_ns);
  row("static torus: slice migrated", m.boards_touched, m.relaunched.size(), m.blast.left_active.size(), m.job.aborted, m.blast.words_lost,
      m.detected_ns - m.failure_ns, m.path_ns(), m.relaunch ? m.relaunch->total_s() * 1e9 : 0, m.state_ns);
  for (const auto& p : rec.problems) fmt::print("    Morphlux problem: {}\n", p);
  for (const auto& p : m.problems) fmt::print("    migration problem: {}\n", p);
  const bool both = rec.path_ns() > 0 && m.path_ns() > 0;
  if (both)
    fmt::print("# migration against Morphlux: {:.1f}x the path ({}), {:.1f}x with the state (modeled)\n", m.path_ns() / rec.path_ns(),
               ranks ? "board time and the ranks' wall time" : "board time; the ranks not run: add --ranks", (m.path_ns() + m.state_ns) / (rec.path_ns() + morphlux_state_ns));
  json report{{"scenario", path}, {"rack", cfg.name}, {"servers", cfg.shape.servers()}, {"slice", block_json(slice)},
              {"failovers", json::array({mj, sj})}};
  std::ofstream f(json_path);
  if (!(f << report.dump(2) << "\n")) throw InputError(fmt::format("cannot write {}", json_path));
  fmt::print("# wrote {}\n", json_path);
  return both && rec.problems.empty() && m.problems.empty() ? 0 : 1;
}

// --tenants WxH,...: the rack file's tenant replaced by tenants the allocator places (the first
// is the one whose XPUs fail), printed; `cfg` is the rack with them, and the JSON its rack file.
json tenants_placed(const std::string& shapes, const std::string& path, const std::string& calibration, sim::rack::RackConfig& cfg) {
  std::vector<host::failover::TenantShape> wanted;
  host::failover::PlacedTenants placed;
  try {
    wanted = host::failover::parse_tenant_shapes(shapes);
    placed = host::failover::place_rack_tenants(cfg.shape, cfg.wiring, wanted);
  } catch (const host::failover::RackTenantsError& e) {
    throw UsageError(fmt::format("--tenants {}: {}", shapes, e.what()));
  }
  json file = read_rack_file(path);
  file.erase("tenant");
  json tenants = json::array();
  for (size_t k = 0; k < placed.tenants.size(); ++k) {
    const auto& p = placed.tenants[k];
    tenants.push_back(rack_placement_json(p));
    fmt::print("# tenant {}: {}x{} placed by the allocator (Morphlux policy, {}) on {}\n", k, p.dim_x, p.dim_y, placed.decided_by[k],
               fmt::join(rack_xpu_names(p.xpu_of_position), ","));
  }
  file["tenants"] = tenants;
  cfg = parse_rack_scenario(file, path + " with --tenants " + shapes, calibration);
  return file;
}

}  // namespace

int cmd_rack_failover(const ArgList& argv) {
  Args args(argv, ArgSpec{{"--scenario", "--out", "--json", "--calibration", "--scenario-seed", "--job-op", "--job-type", "--job-bytes",
                           "--slice", "--state-bytes", "--tenants"},
                          {"--job", "--ranks", "--migrate"},
                          {"--fail"},
                          false});
  const bool seeded = args.has("--scenario-seed");
  for (const char* flag : {"--slice", "--state-bytes"})
    if (args.has(flag) && !args.has("--migrate")) throw UsageError(fmt::format("{} describes the migration baseline: add --migrate", flag));
  if (seeded && args.has("--migrate")) throw UsageError("--scenario-seed N draws whether its seed migrates: it takes no --migrate");
  if (seeded && (args.has("--scenario") || !args.list("--fail").empty()))
    throw UsageError("--scenario-seed N draws the rack and its deaths: it takes no --scenario or --fail");
  if (!seeded && !args.has("--scenario")) throw UsageError("--scenario FILE is required (a rack scenario, traces/scenarios/rack/)");
  if (!seeded && args.list("--fail").empty()) throw UsageError("--fail S.X[,S.X...] is required: the XPUs that die, in order");
  const uint64_t seed = args.u64("--scenario-seed", 0);
  const std::string out = args.str("--out", seeded ? fmt::format("out/rack-failover-seed-{}", seed) : "out/rack-failover");
  const std::string json_path = args.str("--json", out + "/rack-failover.json");
  std::optional<RackSeedPlan> plan;
  std::string path = args.str("--scenario", "");
  if (seeded) plan = rack_seed_plan(seed, source_root() + "/traces/scenarios/rack");
  const std::string calibration = args.str("--calibration", source_root() + "/traces/calibration/mesh32.json");
  const sim::rack::RackConfig cfg = seeded ? parse_rack_scenario(plan->scenario, fmt::format("seed {}'s rack", seed), calibration)
                                           : load_rack_scenario(path, calibration);
  const protocol::RackShape& shape = cfg.shape;
  const std::optional<host::failover::RackJob> job = seeded ? seed_job(*plan) : job_from_flags(args);
  if (seeded && args.has("--ranks")) throw UsageError("--ranks applies to --scenario: a campaign seed's job runs without rank processes");
  std::vector<RackXpu> deaths;
  for (const auto& f : args.list("--fail")) deaths.push_back(parse_rack_xpu(f, shape));
  if (args.has("--tenants") && seeded) throw UsageError("--tenants places a --scenario rack's tenants: a campaign seed draws its own");
  if (args.has("--tenants") && args.has("--migrate")) throw UsageError("--tenants: the migration baseline runs one slice, not several tenants");
  if (args.has("--migrate")) return run_migration_compare(args, path, calibration, out, json_path, job, deaths);
  std::optional<json> placed_file;  // --tenants: the rack file with the allocator's tenants
  sim::rack::RackConfig served_cfg = cfg;
  if (args.has("--tenants")) {
    placed_file = tenants_placed(args.str("--tenants", ""), path, calibration, served_cfg);
    for (const RackXpu& x : deaths)
      if (std::find(served_cfg.tenant.xpu_of_position.begin(), served_cfg.tenant.xpu_of_position.end(), x) ==
          served_cfg.tenant.xpu_of_position.end())
        throw UsageError(fmt::format("--fail {}: not an XPU of tenant 0, the one that fails (the allocator placed it on {})", rack_xpu_name(x),
                                     fmt::join(rack_xpu_names(served_cfg.tenant.xpu_of_position), ",")));
  }
  // Everything checked: nothing is written before.
  std::filesystem::create_directories(out);
  if (seeded || placed_file) {
    path = out + "/scenario.json";  // the drawn rack, or the placed one, as the served rack reads it
    std::ofstream f(path);
    if (!(f << (seeded ? plan->scenario : *placed_file).dump(2) << "\n")) throw InputError(fmt::format("cannot write {}", path));
  }

  if (seeded && plan->migrate) return run_migration_seed(*plan, seed, path, json_path, cfg, calibration, out, *job);
  ServedRack::Options so;
  so.announce = true;
  so.unpluggable = seeded && plan->silent_during >= 0;
  so.job = job;
  so.ranks = args.has("--ranks");
  ServedRack rack(served_cfg, path, calibration, out, so);
  const host::failover::RackTenant& tenant = rack.tenant;
  fmt::print("# {} ({} servers), tenant of {} XPUs, spares {}\n", cfg.name, shape.servers(), tenant.placement.xpu_of_position.size(),
             fmt::join(rack_xpu_names(tenant.spares), ","));
  for (size_t k = 0; k < tenant.others.size(); ++k)
    fmt::print("# tenant {}: {}x{} on {}{}\n", k + 1, tenant.others[k].dim_x, tenant.others[k].dim_y,
               fmt::join(rack_xpu_names(tenant.others[k].xpu_of_position), ","), job ? ", its own job running (checked at every failover)" : "");
  if (seeded) return run_seed(*plan, seed, path, json_path, rack);
  fmt::print("#  failed  spare  case           outcome    boards  XPUs whose links left Active   lanes  errors   lost  aborted   detect(us)   placed(us)   total(us)\n");
  json records = json::array();
  bool clean = true;
  for (const RackXpu& x : deaths) {
    const auto rec = rack.fail(x);
    const std::vector<std::string> left = rack_xpu_names(rec.blast.left_active);
    int lanes = 0;
    for (int n : rec.blast.lanes_left_active) lanes += n;
    const bool placed = rec.spare.server >= 0;
    fmt::print("  {:>6}  {:>5}  {:<13}  {:<9}  {:<6}  {:<28}  {:>5}  {:>6}  {:>5}  {:>7}  {:>11.1f}  {:>11}  {:>10}\n", rack_xpu_name(rec.failed),
               placed ? rack_xpu_name(rec.spare) : "-", !placed ? "no spare" : rec.same_server ? "same server" : "other server",
               placed ? to_string(rec.commit.outcome) : "-", fmt::format("{}", fmt::join(rec.blast.boards_touched, ",")),
               fmt::format("{}", fmt::join(left, ",")), lanes, rec.blast.scoreboard_errors, rec.blast.words_lost,
               rec.job ? fmt::format("{}", rec.job->aborted) : "-", (rec.detected_ns - rec.failure_ns) / 1000,
               rec.done_ns > 0 ? fmt::format("{:.1f}", (rec.done_ns - rec.failure_ns) / 1000) : "-",
               rec.path_ns() > 0 ? fmt::format("{:.1f}", rec.path_ns() / 1000) : "-");
    for (const auto& c : rec.co_tenant_jobs)
      fmt::print("    tenant {}'s job: {} verified, {} aborted, {} wrong since the failure; next verified {}\n", c.job, c.verified, c.aborted,
                 c.wrong, c.next_verified_ns > 0 ? fmt::format("{:.1f} us after it", (c.next_verified_ns - rec.failure_ns) / 1000) : "never");
    for (const auto& p : rec.problems) fmt::print("    problem: {}\n", p);
    clean = clean && rec.problems.empty();
    records.push_back(record_json(rec));
  }
  json report{{"scenario", path}, {"rack", cfg.name}, {"servers", shape.servers()}, {"failovers", records}};
  std::ofstream f(json_path);
  if (!f) throw InputError(fmt::format("cannot write {}", json_path));
  f << report.dump(2) << "\n";
  fmt::print("# wrote {}\n", json_path);
  return clean ? 0 : 1;
}

}  // namespace mxtb::app
