#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "failover_run.h"

#include "firmware/mailbox.h"
#include "firmware/ocs_firmware.h"
#include "sim/sc_runner.h"
#include "sim/server_sc.h"

#include <mxtb/ocs_regs.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstdio>

namespace mxtb::sim {

namespace {

using firmware::FwStatus;
namespace reg = mxtb::ocs::reg;

uint32_t info_field(uint32_t info, uint32_t mask, unsigned shift) { return (info & mask) >> shift; }

// Links that carry one of the map's circuits.
std::vector<int> mapped_links(const firmware::FabricMap& m, int links) {
  std::vector<int> out;
  for (int i = 0; i < links; ++i)
    if (m.port_target[static_cast<size_t>(i)] >= 0) out.push_back(i);
  return out;
}

bool all_active(const ServerSim& sim, const std::vector<int>& links) {
  for (int i : links)
    if (sim.link_state(i) != link::LinkState::Active) return false;
  return true;
}

}  // namespace

FailoverRunResult run_failover(const FailoverRunConfig& cfg) {
  FailoverRunResult res;
  auto wall0 = std::chrono::steady_clock::now();
  const auto& shape = cfg.server.shape;
  MeshCalibration cal = load_calibration(cfg.calibration_file);
  firmware::FabricMap initial = firmware::torus_map(shape, cfg.tenant);
  firmware::TorusPlacement placed = cfg.tenant;
  firmware::TorusPlacement replaced{cfg.tenant.dim_x, cfg.tenant.dim_y, {0, 1, 3, 2}};
  firmware::FabricMap reprogrammed = firmware::torus_map(shape, replaced);
  if (cfg.reprogram) placed = replaced;
  std::optional<firmware::FabricMap> backup;
  if (cfg.kill_xpu) backup = firmware::torus_map(shape, firmware::substitute(placed, *cfg.kill_xpu, cfg.spare));

  int rc = run_under_systemc([&] {
    ServerSim sim(cfg.server);
    ServerClock clock("clock", sim);
    ScHal hal(sim, clock);
    const double period = sim.period_ns();
    const double tau = sim.mesh().tau_ns();
    firmware::FirmwareConfig fc;
    fc.ports = shape.mesh_ports;
    fc.links = sim.links();
    fc.lanes_per_xpu = shape.lanes_per_xpu;
    fc.calibration = cal.elements;
    fc.settle_cycles = static_cast<uint32_t>(std::max(4.0, std::ceil(cfg.settle_taus * tau / period)));
    fc.route_cost_ns = cfg.route_cost_ns;
    firmware::OcsFirmware fw(hal, fc);

    // Bring-up, an optional reprogram and the failover each settle the mesh once.
    const double limit_ns = cfg.limit_us > 0 ? cfg.limit_us * 1000 : 3 * (cfg.settle_taus + 2) * tau + 1'000'000;
    std::vector<int> initial_links = mapped_links(initial, sim.links());
    std::vector<int> final_links = mapped_links(backup ? *backup : (cfg.reprogram ? reprogrammed : initial), sim.links());
    double all_up_since = -1;
    bool firmware_done = false;
    bool reprogram_started = false;
    double reprogram_start_ns = 0, reprogram_done_ns = 0;
    sc_core::sc_event armed, programmed;
    // The host's side of the mailbox (firmware/mailbox.h), over the same AXI port.
    ScHal host_hal(sim, clock);
    uint32_t mailbox_seq = 0;
    auto mailbox = [&](firmware::mailbox::Opcode op, const std::vector<uint32_t>& args) -> std::optional<uint32_t> {
      namespace mb = firmware::mailbox;
      for (size_t i = 0; i < args.size(); ++i)
        host_hal.write32(reg::scratch::addr(mb::kArgs + static_cast<uint32_t>(i)), args[i]);
      host_hal.write32(reg::scratch::addr(mb::kOpcode), static_cast<uint32_t>(op));
      host_hal.write32(reg::scratch::addr(mb::kDoorbell), ++mailbox_seq);
      for (uint64_t deadline = host_hal.now_ns() + 50'000'000; host_hal.now_ns() < deadline;) {
        host_hal.compute(2000);  // the host polls every 2 us
        if (host_hal.read32(reg::scratch::addr(mb::kReplySeq)) == mailbox_seq)
          return host_hal.read32(reg::scratch::addr(mb::kReplyStatus));
      }
      return std::nullopt;
    };
    auto map_words = [](const firmware::FabricMap& m, std::vector<uint32_t> prefix) {
      for (int t : m.port_target) prefix.push_back(t < 0 ? firmware::mailbox::kUnusedPort : static_cast<uint32_t>(t));
      return prefix;
    };

    sc_core::sc_spawn([&] {
      std::string why;
      auto fail = [&](const std::string& what) {
        res.failures.push_back(what);
        firmware_done = true;
      };
      if (fw.init(&why) != FwStatus::Ok) return fail("firmware init: " + why);
      if (FwStatus s = fw.set_port_map(initial.port_target, &why); s != FwStatus::Ok)
        return fail(fmt::format("programming the tenant: {}: {}", firmware::to_string(s), why));
      programmed.notify(sc_core::SC_ZERO_TIME);
      if (backup && !cfg.reprogram) {
        if (fw.arm_backup(*cfg.kill_xpu, cfg.spare, backup->port_target, &why) != FwStatus::Ok)
          return fail("arming the backup: " + why);
        res.armed_ns = static_cast<double>(hal.now_ns());
        armed.notify(sc_core::SC_ZERO_TIME);
      }
      fw.run_until(static_cast<uint64_t>(limit_ns));
      firmware_done = true;
    });
    if (cfg.reprogram) {
      // The host re-places the tenant and re-arms the spare through the firmware's mailbox.
      sc_core::sc_spawn([&] {
        namespace mb = firmware::mailbox;
        sc_core::wait(programmed);
        sc_core::wait(sc_core::sc_time(50'000, sc_core::SC_NS));
        // Bad commands first: each must be refused with its status and change nothing.
        uint32_t gen_before = fw.active_generation();
        auto bad_map = map_words(reprogrammed, {});
        bad_map[1] = bad_map[0];  // two inputs to one output: not a permutation
        auto st_op = mailbox(static_cast<mb::Opcode>(99), {});
        auto st_map = mailbox(mb::Opcode::SetPortMap, bad_map);
        if (st_op != static_cast<uint32_t>(FwStatus::BadCommand) || st_map != static_cast<uint32_t>(FwStatus::BadMap) ||
            fw.active_generation() != gen_before)
          res.failures.push_back(fmt::format("mailbox bad input: unknown opcode got status {}, bad map got {}, generation {} -> {}",
                                             st_op ? *st_op : 999u, st_map ? *st_map : 999u, gen_before, fw.active_generation()));
        reprogram_started = true;
        reprogram_start_ns = static_cast<double>(host_hal.now_ns());
        auto st = mailbox(mb::Opcode::SetPortMap, map_words(reprogrammed, {}));
        reprogram_done_ns = static_cast<double>(host_hal.now_ns());
        if (st != 0u) {
          res.failures.push_back(st ? fmt::format("mailbox set port map answered status {}", *st) : "mailbox set port map: no answer");
          return;
        }
        if (backup) {
          st = mailbox(mb::Opcode::ArmBackup,
                       map_words(*backup, {static_cast<uint32_t>(*cfg.kill_xpu), static_cast<uint32_t>(cfg.spare)}));
          if (st != 0u) {
            res.failures.push_back(st ? fmt::format("mailbox arm backup answered status {}", *st) : "mailbox arm backup: no answer");
            return;
          }
        }
        st = mailbox(mb::Opcode::Report, {});
        uint32_t gen = host_hal.read32(reg::scratch::addr(mb::kReplyData + mb::kReportActiveGen));
        uint32_t armed_xpu = host_hal.read32(reg::scratch::addr(mb::kReplyData + mb::kReportArmedXpu));
        uint32_t want_armed = backup ? static_cast<uint32_t>(*cfg.kill_xpu) : mb::kUnusedPort;
        if (st != 0u || gen != fw.active_generation() || armed_xpu != want_armed)
          res.failures.push_back(fmt::format("mailbox report: status {}, active generation {} (firmware: {}), armed XPU {} (want {})",
                                             st ? *st : 999u, gen, fw.active_generation(), armed_xpu, want_armed));
        res.armed_ns = static_cast<double>(host_hal.now_ns());
        armed.notify(sc_core::SC_ZERO_TIME);
      });
    }
    if (cfg.progress_us > 0) {
      sc_core::sc_spawn([&] {
        for (;;) {
          sc_core::wait(sc_core::sc_time(cfg.progress_us * 1000, sc_core::SC_NS));
          int up = 0;
          for (int i = 0; i < sim.links(); ++i) up += sim.link_state(i) == link::LinkState::Active;
          std::fprintf(stderr, "  ... %.0f us simulated, %d of %d links Active, %zu failovers\n", sim.now_ns() / 1000, up,
                       sim.links(), fw.failovers().size());
        }
      });
    }
    if (cfg.kill_xpu) {
      sc_core::sc_spawn([&] {
        sc_core::wait(armed);
        sc_core::wait(sc_core::sc_time(cfg.kill_after_armed_us * 1000, sc_core::SC_NS));
        res.failure_ns = sim.now_ns();
        sim.kill_xpu(*cfg.kill_xpu);
      });
    }
    clock.stop_when([&] {
      double now = sim.now_ns();
      if (now >= limit_ns || (firmware_done && !res.failures.empty())) return true;
      bool ready = cfg.kill_xpu ? !fw.failovers().empty() : (!cfg.reprogram || reprogram_started);
      if (!ready) return false;
      if (!all_active(sim, final_links)) {
        all_up_since = -1;
        return false;
      }
      if (all_up_since < 0) all_up_since = now;
      return now >= all_up_since + cfg.margin_us * 1000;
    });
    sc_core::sc_start();
    if (std::getenv("MXTB_DEBUG_EVENTS")) {
      for (const auto& e : fw.events())
        fmt::print(stderr, "ev cycle {} type {} code {} index {} data {:#x}\n", e.cycle, e.info & 0xF, (e.info >> 4) & 0xF,
                   (e.info >> 8) & 0xFF, e.info >> 16);
      for (int i = 0; i < sim.links(); ++i) {
        auto r = sim.link_report(i);
        fmt::print(stderr, "link {} {} peer {}.{} sent {} delivered {} errors {} skipped {} resyncs {}\n", i,
                   link::to_string(r.state), r.peer.xpu, r.peer.lane, r.messages_sent, r.messages_delivered,
                   r.scoreboard_errors, r.skipped_words, r.resyncs);
      }
      for (const auto& t : sim.transitions())
        if (t.cycle > 15000)
          fmt::print(stderr, "tr cycle {} link {} {} -> {} ({})\n", t.cycle, t.link, link::to_string(t.from),
                     link::to_string(t.to), link::to_string(t.reason));
    }

    // What happened, from the controller's event log and the link layers' transitions.
    const auto& tr = sim.transitions();
    // When every link in `links` was Active again after `after_ns`: a link that went down and came
    // back counts at its last return to Active; a link the event never disturbed does not delay it.
    // -1 when one of them is not Active at the end.
    auto last_up_time = [&](const std::vector<int>& links, double after_ns) {
      double t = after_ns;
      for (int i : links) {
        if (sim.link_state(i) != link::LinkState::Active) return -1.0;
        double last_up = -1;
        for (const auto& x : tr)
          if (x.link == i && x.to == link::LinkState::Active) last_up = x.cycle * period;
        if (last_up >= after_ns) t = std::max(t, last_up);
      }
      return t;
    };
    // The first moment, from `from_ns` on, at which every link in `links` was Active at once.
    auto first_all_active = [&](const std::vector<int>& links, double from_ns) {
      std::vector<link::LinkState> st(static_cast<size_t>(sim.links()), link::LinkState::Reset);
      auto all_up = [&] {
        for (int i : links)
          if (st[static_cast<size_t>(i)] != link::LinkState::Active) return false;
        return true;
      };
      bool checked_start = false;
      for (const auto& x : tr) {
        double t = x.cycle * period;
        if (t >= from_ns && !checked_start) {
          checked_start = true;
          if (all_up()) return from_ns;
        }
        st[static_cast<size_t>(x.link)] = x.to;
        if (t >= from_ns && all_up()) return t;
      }
      return -1.0;
    };
    double up0 = first_all_active(initial_links, 0);
    res.initial_map_ok = up0 >= 0;
    res.initial_up_ns = up0;
    if (!res.initial_map_ok) res.failures.push_back("the tenant's circuits did not all train after the first commit");
    if (cfg.reprogram) {
      // The moved circuits retrain once the new map is active (the firmware has read its outcome).
      double up = first_all_active(mapped_links(reprogrammed, sim.links()), reprogram_done_ns);
      res.reprogram_ok = reprogram_started && up >= 0;
      res.reprogram_ns = up - reprogram_start_ns;
      if (!res.reprogram_ok) res.failures.push_back("after reprogramming under traffic, not every circuit trained again");
    }
    res.all_up_after = all_active(sim, final_links);
    if (!res.all_up_after) res.failures.push_back("not every circuit of the final map is Active at the end");
    if (cfg.kill_xpu) {
      res.failover_done = !fw.failovers().empty() && fw.failovers().front().status == FwStatus::Ok;
      if (!res.failover_done) {
        res.failures.push_back(fw.failovers().empty() ? "the firmware never failed over"
                                                      : std::string("failover commit: ") +
                                                            firmware::to_string(fw.failovers().front().status));
      } else {
        const auto& f = fw.failovers().front();
        uint32_t gen = f.generation;
        auto event_ns = [&](mxtb::ocs::Event type) {
          for (const auto& e : fw.events()) {
            auto t = static_cast<mxtb::ocs::Event>(info_field(e.info, reg::event_info::kTypeMask, reg::event_info::kTypeShift));
            uint32_t data = info_field(e.info, reg::event_info::kDataMask, reg::event_info::kDataShift);
            if (t == type && data == gen) return static_cast<double>(e.cycle) * period;
          }
          return -1.0;
        };
        // Controller timestamps count from its reset, a few cycles before the world's cycle 0.
        double detect = static_cast<double>(f.trigger_event_cycle) * period;
        double commit = event_ns(mxtb::ocs::Event::CommitStart);
        double programmed = event_ns(mxtb::ocs::Event::ProgramDone);
        double settled = event_ns(mxtb::ocs::Event::SettleDone);
        double verified = event_ns(mxtb::ocs::Event::VerifyPass);
        double trained = last_up_time(final_links, verified);
        res.phases = {
            {"detect", res.failure_ns, detect, "rtl"},
            {"firmware", detect, commit, "firmware"},
            {"program", commit, programmed, "rtl"},
            {"settle", programmed, settled, "rtl"},
            {"verify", settled, verified, "rtl"},
            {"train", verified, trained, "rtl"},
        };
        res.total_ns = trained - res.failure_ns;
        for (const auto& p : res.phases)
          if (p.start_ns < 0 || p.end_ns < p.start_ns)
            res.failures.push_back(fmt::format("phase {} has no consistent timestamps ({} .. {})", p.name, p.start_ns, p.end_ns));
        // Re-routing a rearrangeably non-blocking mesh can move circuits the failure never
        // touched: count their links that dropped after the failure.
        const int lanes = shape.lanes_per_xpu;
        for (int i : final_links) {
          int peer = backup->port_target[static_cast<size_t>(i)];
          auto involved = [&](int port) { return port / lanes == *cfg.kill_xpu || port / lanes == cfg.spare; };
          if (involved(i) || involved(peer)) continue;
          for (const auto& x : tr)
            if (x.link == i && x.from == link::LinkState::Active && x.cycle * period >= res.failure_ns) {
              ++res.collateral_links;
              break;
            }
        }
        for (int l = 0; l < shape.lanes_per_xpu; ++l)
          res.messages_after_failover_on_spare += sim.link_report(cfg.spare * shape.lanes_per_xpu + l).messages_delivered;
        if (res.messages_after_failover_on_spare == 0)
          res.failures.push_back("no traffic reached the spare after the failover");
      }
    }
    res.messages_delivered = sim.messages_delivered();
    res.scoreboard_errors = sim.scoreboard_errors();
    if (res.scoreboard_errors) res.failures.push_back(fmt::format("{} scoreboard errors on living XPUs", res.scoreboard_errors));
    res.cycles = sim.cycle();
    res.dac_writes = sim.dac_writes();
    res.pd_reads = sim.pd_reads();
    res.bus_reads = fw.bus_reads();
    res.bus_writes = fw.bus_writes();
    return 0;
  });
  if (rc != 0) res.failures.push_back("SystemC reported an error");
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return res;
}

nlohmann::json to_json(const FailoverRunConfig& cfg, const FailoverRunResult& r) {
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& p : r.phases)
    phases.push_back({{"name", p.name}, {"start_ns", p.start_ns}, {"end_ns", p.end_ns},
                      {"duration_ns", p.end_ns - p.start_ns}, {"source", p.source}});
  return nlohmann::json{
      {"time_mode", "free"},
      {"seed", cfg.server.seed},
      {"settle_preset", to_string(cfg.server.mesh.settle)},
      {"tau_ns", cfg.server.mesh.tau_ns ? *cfg.server.mesh.tau_ns : preset_tau_ns(cfg.server.mesh.settle)},
      {"kill_xpu", cfg.kill_xpu ? *cfg.kill_xpu : -1},
      {"spare", cfg.spare},
      {"passed", r.passed()},
      {"failures", r.failures},
      {"initial_up_ns", r.initial_up_ns},
      {"reprogram_ns", r.reprogram_ns},
      {"failover", {{"failure_ns", r.failure_ns}, {"total_ns", r.total_ns}, {"phases", phases},
                    {"collateral_links", r.collateral_links}}},
      {"messages_delivered", r.messages_delivered},
      {"messages_on_spare_after_failover", r.messages_after_failover_on_spare},
      {"scoreboard_errors", r.scoreboard_errors},
      {"cycles", r.cycles},
      {"dac_writes", r.dac_writes},
      {"pd_reads", r.pd_reads},
      {"firmware_bus_reads", r.bus_reads},
      {"firmware_bus_writes", r.bus_writes},
      {"wall_s", r.wall_s},
  };
}

}  // namespace mxtb::sim
