// `mxtb rack-failover`: XPU deaths in a served rack, each failed over by the host's rack path
// (host/failover/rack_failover.h) and its blast radius measured (docs/rack.md, "Failover in a
// rack"). The rack runs as `mxtb rack --serve` in lockstep, a child process on loopback; the host
// reaches each server's board by its own address, as it would S boards.
#include "apps/mxtb/args.h"
#include "apps/mxtb/commands.h"
#include "apps/mxtb/scenario.h"

#include "host/fabric/board.h"
#include "host/fabric/client.h"
#include "host/fabric/emulator_process.h"
#include "host/failover/rack_failover.h"
#include "protocol/rack_map.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <tuple>

namespace mxtb::app {

using nlohmann::json;
using protocol::RackXpu;

namespace {

std::string name(const RackXpu& x) { return fmt::format("{}.{}", x.server, x.xpu); }

// XPU names in (server, XPU) order.
std::vector<std::string> names(std::vector<RackXpu> xs) {
  std::sort(xs.begin(), xs.end(), [](const RackXpu& a, const RackXpu& b) { return std::tie(a.server, a.xpu) < std::tie(b.server, b.xpu); });
  std::vector<std::string> out;
  for (const auto& x : xs) out.push_back(name(x));
  return out;
}

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

// The rack's XPUs outside the tenant: its spares.
std::vector<RackXpu> spares_of(const protocol::RackShape& shape, const protocol::RackPlacement& p) {
  std::vector<RackXpu> out;
  for (int s = 0; s < shape.servers(); ++s)
    for (int x = 0; x < shape.server.xpus; ++x)
      if (std::find(p.xpu_of_position.begin(), p.xpu_of_position.end(), RackXpu{s, x}) == p.xpu_of_position.end())
        out.push_back({s, x});
  return out;
}

json record_json(const host::failover::RackFailoverRecord& r) {
  json steps = json::array();
  for (const auto& s : r.commit.steps)
    steps.push_back({{"server", s.server}, {"step", to_string(s.step)}, {"ns", s.end_ns - s.start_ns}, {"ok", s.ok}, {"detail", s.detail}});
  const bool placed = r.spare.server >= 0;
  return {{"failed", name(r.failed)},
          {"spare", placed ? json(name(r.spare)) : json(nullptr)},
          {"same_server", r.same_server},
          {"spare_reason", r.spare_reason},
          {"outcome", placed ? json(to_string(r.commit.outcome)) : json(nullptr)},
          {"why", r.commit.why},
          {"steps", steps},
          {"blast_radius",
           {{"boards_touched", r.blast.boards_touched},
            {"xpus_left_active", names(r.blast.left_active)},
            {"xpus_left_active_outside_circuits", names(r.blast.outside())},
            {"lanes_left_active_by_server", r.blast.lanes_left_active},
            {"scoreboard_errors", r.blast.scoreboard_errors},
            {"words_lost", r.blast.words_lost}}},
          {"detect_ns", r.detected_ns - r.failure_ns},
          {"total_ns", r.done_ns > 0 ? json(r.done_ns - r.failure_ns) : json(nullptr)},
          {"problems", r.problems}};
}

}  // namespace

int cmd_rack_failover(const ArgList& argv) {
  Args args(argv, ArgSpec{{"--scenario", "--out", "--json", "--calibration"}, {}, {"--fail"}, false});
  if (!args.has("--scenario")) throw UsageError("--scenario FILE is required (a rack scenario, traces/scenarios/rack/)");
  if (args.list("--fail").empty()) throw UsageError("--fail S.X[,S.X...] is required: the XPUs that die, in order");
  const std::string path = args.str("--scenario");
  const std::string calibration = args.str("--calibration", source_root() + "/traces/calibration/mesh32.json");
  const sim::rack::RackConfig cfg = load_rack_scenario(path, calibration);
  const protocol::RackShape& shape = cfg.shape;
  std::vector<RackXpu> deaths;
  for (const auto& f : args.list("--fail")) deaths.push_back(parse_rack_xpu(f, shape));
  const std::string out = args.str("--out", "out/rack-failover");
  const std::string json_path = args.str("--json", out + "/rack-failover.json");
  std::filesystem::create_directories(out);

  host::failover::RackTenant tenant;
  tenant.placement = cfg.tenant;
  tenant.spares = spares_of(shape, cfg.tenant);
  host::failover::RackFailoverOptions o;
  o.commit.shape = shape;
  o.commit.wiring = cfg.wiring;

  std::vector<std::string> rack_args{"--scenario", path, "--calibration", calibration, "--serve", "--time-mode", "lockstep",
                                     "--listen", "127.0.0.1:0", "--out", out};
  host::fabric::EmulatorProcess emulator(host::fabric::self_executable(), rack_args, out + "/rack.log", std::chrono::seconds(300), "rack",
                                         shape.servers());
  host::fabric::ClientOptions co;
  co.timeout = std::chrono::milliseconds(10'000);
  std::vector<std::unique_ptr<host::fabric::Client>> clients;
  std::vector<std::unique_ptr<host::fabric::Board>> owned;
  std::vector<host::fabric::Board*> boards;
  for (const auto& t : emulator.targets()) {
    fmt::print("server {} at {}\n", clients.size(), t);
    clients.push_back(std::make_unique<host::fabric::Client>(t, co));
    owned.push_back(std::make_unique<host::fabric::Board>(*clients.back()));
    boards.push_back(owned.back().get());
  }
  const auto maps = protocol::rack_torus_map(shape, cfg.wiring, cfg.tenant).port_target;
  if (!host::failover::lanes_active(boards, maps, shape.server.links(), 500'000))
    throw InputError(fmt::format("{}: the tenant's lanes are not all Active 500 us after bring-up (see {}/rack.log)", path, out));

  fmt::print("# {} ({} servers), tenant of {} XPUs, spares {}\n", cfg.name, shape.servers(), tenant.placement.xpu_of_position.size(),
             fmt::join(names(tenant.spares), ","));
  fmt::print("#  failed  spare  case           outcome    boards  XPUs whose links left Active   lanes  errors   lost   detect(us)   total(us)\n");
  json records = json::array();
  bool clean = true;
  for (const RackXpu& x : deaths) {
    for (auto* b : boards) b->pop_events();
    const uint64_t at = boards[0]->clock().now_ns() + 5'000;
    boards[static_cast<size_t>(x.server)]->arm_fault(emu::FaultKind::KillXpu, static_cast<uint32_t>(x.xpu), 0, at);
    const auto rec = host::failover::rack_failover(boards, tenant, static_cast<double>(at), o);
    const std::vector<std::string> left = names(rec.blast.left_active);
    int lanes = 0;
    for (int n : rec.blast.lanes_left_active) lanes += n;
    const bool placed = rec.spare.server >= 0;
    fmt::print("  {:>6}  {:>5}  {:<13}  {:<9}  {:<6}  {:<28}  {:>5}  {:>6}  {:>5}  {:>11.1f}  {:>10}\n", name(rec.failed),
               placed ? name(rec.spare) : "-", !placed ? "no spare" : rec.same_server ? "same server" : "other server",
               placed ? to_string(rec.commit.outcome) : "-", fmt::format("{}", fmt::join(rec.blast.boards_touched, ",")),
               fmt::format("{}", fmt::join(left, ",")), lanes, rec.blast.scoreboard_errors, rec.blast.words_lost, (rec.detected_ns - rec.failure_ns) / 1000,
               rec.done_ns > 0 ? fmt::format("{:.1f}", (rec.done_ns - rec.failure_ns) / 1000) : "-");
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
