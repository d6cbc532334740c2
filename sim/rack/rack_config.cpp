#include "sim/rack/rack_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace mxtb::sim::rack {

uint64_t server_seed(uint64_t rack_seed, int server) {
  return rack_seed + static_cast<uint64_t>(server) * 0x9E3779B97F4A7C15ull;  // server 0: the rack's, as a server alone
}

int xpu_base(const RackConfig& cfg, int server) { return server * cfg.shape.server.xpus; }

uint32_t fibre_latency_cycles(const RackConfig& cfg, int fibre) {
  const FibreLine& l = cfg.lines.at(static_cast<size_t>(fibre));
  const double ns = l.metres * kFibreNsPerMetre + l.retimer_ns;
  const double period = 1000.0 / cfg.server.clock_mhz;
  const double cycles = std::round(ns / period);
  if (!(cycles >= 1))
    throw RackError(fmt::format("fibre {}: {} m of fibre and {} ns of retimers take {:.2f} ns, below one cycle of the {} MHz lane clock "
                                "({:.2f} ns): the window exchange needs at least one",
                                fibre, l.metres, l.retimer_ns, ns, cfg.server.clock_mhz, period));
  if (cycles > 1e6) throw RackError(fmt::format("fibre {}: {} m of fibre is {} cycles; at most 1000000", fibre, l.metres, cycles));
  return static_cast<uint32_t>(cycles);
}

namespace {
uint32_t shortest_latency(const RackConfig& cfg) {
  uint32_t w = 64;
  for (size_t i = 0; i < cfg.wiring.size(); ++i) w = std::min(w, fibre_latency_cycles(cfg, static_cast<int>(i)));
  return w;
}
}  // namespace

uint32_t window_cycles(const RackConfig& cfg) { return cfg.window ? cfg.window : shortest_latency(cfg); }

ServerConfig server_config(const RackConfig& cfg, int server) {
  ServerConfig s = cfg.server;
  s.name = fmt::format("server{}", server);
  s.seed = server_seed(cfg.seed, server);
  s.fibre_ports.clear();
  for (const auto& f : cfg.wiring)
    for (const auto* e : {&f.a, &f.b})
      if (e->server == server) s.fibre_ports.push_back(e->port);
  std::sort(s.fibre_ports.begin(), s.fibre_ports.end());
  s.fibre_window_cycles = window_cycles(cfg);
  s.xpu_base = xpu_base(cfg, server);
  s.streams_seed = cfg.seed;
  s.threads = 1;
  return s;
}

std::vector<protocol::RackPlacement> rack_tenants(const RackConfig& cfg) {
  std::vector<protocol::RackPlacement> all{cfg.tenant};
  all.insert(all.end(), cfg.co_tenants.begin(), cfg.co_tenants.end());
  return all;
}

void check_rack(const RackConfig& cfg) {
  if (std::string why = unsupported_shape(cfg.shape.server); !why.empty()) throw RackError("rack: server: " + why);
  if (cfg.server.shape != cfg.shape.server) throw RackError("rack: the servers' template and the rack disagree on the server's shape");
  if (cfg.shape.servers() * cfg.shape.server.xpus > 0xFF)
    throw RackError(fmt::format("rack: {} servers of {} XPUs are {} XPUs; the link layers number at most 255", cfg.shape.servers(),
                                cfg.shape.server.xpus, cfg.shape.servers() * cfg.shape.server.xpus));
  try {
    protocol::check_wiring(cfg.shape, cfg.wiring);
    if (!cfg.co_tenants.empty() && cfg.tenant.xpu_of_position.empty())
      throw RackError("rack: co-tenants beside a rack with no tenant: the first tenant is missing");
    protocol::rack_tenants_map(cfg.shape, cfg.wiring, rack_tenants(cfg));
  } catch (const protocol::RackMapError& e) {
    throw RackError(e.what());
  }
  if (cfg.lines.size() != cfg.wiring.size())
    throw RackError(fmt::format("rack: {} fibres wired, {} described", cfg.wiring.size(), cfg.lines.size()));
  for (size_t i = 0; i < cfg.lines.size(); ++i) {
    const FibreLine& l = cfg.lines[i];
    if (!(l.metres >= 0) || !(l.retimer_ns >= 0) || !(l.loss_db >= 0) || !std::isfinite(l.metres + l.retimer_ns + l.loss_db))
      throw RackError(fmt::format("fibre {}: metres {}, retimer_ns {}, loss_db {}: each must be a finite value >= 0", i, l.metres,
                                  l.retimer_ns, l.loss_db));
    fibre_latency_cycles(cfg, static_cast<int>(i));
  }
  for (size_t i = 0; i < cfg.faults.size(); ++i) {
    const FibreFault& f = cfg.faults[i];
    if (f.fibre < 0 || static_cast<size_t>(f.fibre) >= cfg.wiring.size())
      throw RackError(fmt::format("fault {}: fibre {} does not exist (the wiring has fibres 0..{})", i, f.fibre,
                                  static_cast<int>(cfg.wiring.size()) - 1));
    if (f.kind == FibreFault::Kind::Dark && f.cycles == 0) throw RackError(fmt::format("fault {}: a dark fibre for 0 cycles", i));
  }
  if (!(cfg.run_us > 0)) throw RackError(fmt::format("rack: run_us must be above 0, got {}", cfg.run_us));
  if (cfg.window > shortest_latency(cfg))
    throw RackError(fmt::format("rack: a window of {} cycles is longer than the shortest fibre's latency ({} cycles): a sample would be "
                                "due inside the window that sent it",
                                cfg.window, shortest_latency(cfg)));
}

}  // namespace mxtb::sim::rack
