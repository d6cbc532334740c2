#include "apps/mxtb/served_rack.h"

#include "apps/mxtb/args.h"
#include "protocol/rack_map.h"
#include "sim/rack/spare_ready.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <tuple>

namespace mxtb::app {

using protocol::RackXpu;

std::string rack_xpu_name(const RackXpu& x) { return fmt::format("{}.{}", x.server, x.xpu); }

std::vector<std::string> rack_xpu_names(std::vector<RackXpu> xs) {
  std::sort(xs.begin(), xs.end(), [](const RackXpu& a, const RackXpu& b) { return std::tie(a.server, a.xpu) < std::tie(b.server, b.xpu); });
  std::vector<std::string> out;
  for (const auto& x : xs) out.push_back(rack_xpu_name(x));
  return out;
}

std::vector<RackXpu> spares_of(const protocol::RackShape& shape, const protocol::RackPlacement& p) {
  return spares_of(shape, std::vector<protocol::RackPlacement>{p});
}

std::vector<RackXpu> spares_of(const protocol::RackShape& shape, const std::vector<protocol::RackPlacement>& tenants) {
  std::vector<RackXpu> out;
  auto placed = [&](const RackXpu& x) {
    for (const auto& p : tenants)
      if (std::find(p.xpu_of_position.begin(), p.xpu_of_position.end(), x) != p.xpu_of_position.end()) return true;
    return false;
  };
  for (int s = 0; s < shape.servers(); ++s)
    for (int x = 0; x < shape.server.xpus; ++x)
      if (!placed({s, x})) out.push_back({s, x});
  return out;
}

namespace {
// Every board's events drained, then XPU x armed to die `after_ns` of board time from now: the
// failure's time, from which a failover or a migration measures.
double arm_death(std::vector<host::fabric::Board*>& boards, const RackXpu& x, uint64_t after_ns) {
  for (auto* b : boards) b->pop_events();
  const uint64_t at = boards[0]->clock().now_ns() + after_ns;
  boards[static_cast<size_t>(x.server)]->arm_fault(emu::FaultKind::KillXpu, static_cast<uint32_t>(x.xpu), 0, at);
  return static_cast<double>(at);
}
}  // namespace

ServedRack::ServedRack(sim::rack::RackConfig config, const std::string& scenario_path, const std::string& calibration,
                       const std::string& out, const Options& o)
    : cfg(std::move(config)) {
  const bool announce = o.announce, unpluggable = o.unpluggable, ranks = o.ranks;
  const std::optional<host::failover::RackJob>& job = o.job;
  std::filesystem::create_directories(out);  // the rack's log and reports
  const protocol::RackShape& shape = cfg.shape;
  tenant.placement = cfg.tenant;
  tenant.others = cfg.co_tenants;  // the first tenant is the one whose XPUs fail; the others run beside it
  tenant.spares = spares_of(shape, sim::rack::rack_tenants(cfg));
  options.commit.shape = shape;
  options.commit.wiring = cfg.wiring;
  std::vector<std::string> rack_args{"--scenario", scenario_path, "--calibration", calibration, "--serve", "--time-mode",
                                     "lockstep",   "--listen",     "127.0.0.1:0",   "--out",       out};
  if (job) rack_args.push_back("--job");
  emulator_ = std::make_unique<host::fabric::EmulatorProcess>(host::fabric::self_executable(), rack_args, out + "/rack.log",
                                                              std::chrono::seconds(300), "rack", shape.servers());
  client_options_.timeout = std::chrono::milliseconds(10'000);
  if (unpluggable) {  // an attempt and two retries: a silent board named within the budget
    client_options_.timeout = kSilentClientBudget / 3;
    client_options_.retries = 2;
  }
  for (const auto& t : emulator_->targets()) {
    if (announce) fmt::print("server {} at {}\n", clients_.size(), t);
    if (unpluggable) shims_.push_back(std::make_unique<host::fabric::LossyShim>(t, 0, 0, 0, shims_.size()));
    targets_.push_back(unpluggable ? shims_.back()->target() : t);
    clients_.push_back(std::make_unique<host::fabric::Client>(targets_.back(), client_options_));
    owned_.push_back(std::make_unique<host::fabric::Board>(*clients_.back()));
    boards.push_back(owned_.back().get());
  }
  options.reconnect = [this](int server) { return reconnect(server); };
  // The host watches the tenants' lanes and the spare it places; an idle XPU's lanes, without a
  // circuit, train on stray light and would flood the queues it drains through every board. The
  // jobs' events, which every board queues, it reads from server 0's.
  for (size_t s = 0; s < boards.size(); ++s) boards[s]->set_event_filter(true, s != 0);
  tenant.running = sim::rack::bring_up_map(cfg);  // the fibres the boards' bring-up took
  const auto& maps = tenant.running.port_target;
  if (!host::failover::lanes_active(boards, maps, shape.server.links(), 500'000))
    throw InputError(fmt::format("{}: the tenant's lanes are not all Active 500 us after bring-up (see {}/rack.log)", scenario_path, out));
  if (ranks && !job) throw std::logic_error("ServedRack: ranks without a job");
  const std::vector<int> ring = protocol::rack_ring_xpus(shape, o.job_slice ? *o.job_slice : cfg.tenant);
  if (ranks) {
    host::comm::RankGroupConfig rc;
    rc.executable = host::fabric::self_executable();
    rc.work_dir = out + "/ranks";
    std::vector<int> spare_ranks;
    if (o.job_slice) rc.restart = host::comm::Restart::Relaunch;  // a migration starts every rank anew elsewhere
    else
      for (const auto& x : tenant.spares) spare_ranks.push_back(protocol::rack_xpu(shape, x));
    try {
      ranks_ = std::make_unique<host::comm::RankGroup>(rc, ring, spare_ranks);
    } catch (const host::comm::CommError& e) {
      throw InputError(fmt::format("{}: the job's ranks did not start: {}", scenario_path, e.what()));
    }
    options.ranks = ranks_.get();
  }
  if (job) {
    options.job = job;
    std::vector<std::vector<host::fabric::EmuEventRecord>> events(boards.size());
    if (host::failover::form_rack_job(boards, ring, *job, options.poll_ns, events) == 0)
      throw InputError(fmt::format("{}: the tenant's job on rack XPUs {} has no verified collective within {} us of its forming (see {}/rack.log)",
                                   scenario_path, fmt::join(ring, ","), job->first_timeout_ns / 1000.0, out));
    // Every other tenant runs its own job (job k: tenant k), checked across every failover.
    for (size_t k = 1; k <= cfg.co_tenants.size(); ++k) {
      const std::vector<int> co_ring = protocol::rack_ring_xpus(shape, cfg.co_tenants[k - 1]);
      if (host::failover::form_rack_job(boards, co_ring, *job, options.poll_ns, events, nullptr, static_cast<int>(k)) == 0)
        throw InputError(fmt::format("{}: tenant {}'s job on rack XPUs {} has no verified collective within {} us of its forming (see {}/rack.log)",
                                     scenario_path, k, fmt::join(co_ring, ","), job->first_timeout_ns / 1000.0, out));
      options.co_tenant_jobs.push_back(static_cast<int>(k));
    }
  }
  tenant.circuits_moved = host::failover::circuits_moved(boards);
}

void ServedRack::unplug(int server, bool down) {
  if (shims_.empty()) throw std::logic_error("ServedRack::unplug on a rack started without its shims");
  shims_.at(static_cast<size_t>(server))->set_down(down);
}

host::fabric::Board* ServedRack::reconnect(int server) {
  const auto s = static_cast<size_t>(server);
  auto client = std::make_unique<host::fabric::Client>(targets_.at(s), client_options_);
  auto board = std::make_unique<host::fabric::Board>(*client);
  boards[s] = board.get();
  owned_[s] = std::move(board);
  clients_[s] = std::move(client);
  return boards[s];
}

host::failover::RackFailoverRecord ServedRack::fail(const RackXpu& x, uint64_t after_ns) { return fail(x, after_ns, options); }

host::failover::RackFailoverRecord ServedRack::fail(const RackXpu& x, uint64_t after_ns, const host::failover::RackFailoverOptions& o) {
  return host::failover::rack_failover(boards, tenant, arm_death(boards, x, after_ns), o);
}

StaticTorus::StaticTorus(const sim::rack::RackConfig& cfg, const std::string& scenario_path, const std::string& calibration,
                         const std::string& out, const host::failover::TorusBlock& s, const host::failover::RackJob& job, bool ranks,
                         uint64_t state_bytes)
    : torus(cfg.tenant), slice(s) {
  ServedRack::Options so;
  so.job = job;
  so.ranks = ranks;
  so.job_slice = host::failover::block_placement(torus, slice);
  rack_ = std::make_unique<ServedRack>(cfg, scenario_path, calibration, out, so);
  options.shape = cfg.shape;
  options.job = job;
  options.ranks = rack_->ranks();
  options.state_bytes = state_bytes;
  options.lane_gbps = protocol::lane_gbps(cfg.server.clock_mhz);
}

host::failover::RackMigration StaticTorus::fail(const RackXpu& x, uint64_t after_ns) {
  return host::failover::rack_migrate(rack_->boards, torus, slice, arm_death(rack_->boards, x, after_ns), options);
}

}  // namespace mxtb::app
