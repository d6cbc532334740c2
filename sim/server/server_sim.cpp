// ServerSim: the emulated server; its engines compute the clocks (sim/server/engine.h).
#include "sim/server/server_sim.h"

#include "sim/server/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace mxtb::sim {

std::vector<int> server_partition_bounds(int links, int threads) {
  if (links < 1 || threads < 1 || threads > links)
    throw std::invalid_argument(fmt::format("server: {} threads cannot share {} links", threads, links));
  std::vector<int> bounds{0};
  const double share = (links + kCoordinatorLinks) / threads;
  int first = threads == 1 ? links : std::clamp(static_cast<int>(share - kCoordinatorLinks + 0.5), 0, links);
  bounds.push_back(first);
  for (int p = 1; p < threads; ++p) {
    int rest = links - bounds.back();
    int left = threads - p;
    bounds.push_back(bounds.back() + (rest + left - 1) / left);
  }
  return bounds;
}

const char* to_string(ServerEngine e) {
  switch (e) {
    case ServerEngine::Reference: return "reference";
    case ServerEngine::Fast: return "fast";
  }
  return "?";
}

std::optional<ServerEngine> server_engine_from_string(const std::string& name) {
  for (ServerEngine e : {ServerEngine::Reference, ServerEngine::Fast})
    if (name == to_string(e)) return e;
  return std::nullopt;
}

std::string unsupported_shape(const protocol::ServerShape& s) {
  // The controller models there are (rtl/CMakeLists.txt): 20 links (every engine) and 32 links
  // (the fast engine without waveforms), both on the 32-port mesh.
  const int links = s.links();
  if (s.mesh_ports == 32 && (links == 20 || links == 32)) return "";
  return fmt::format("{} XPUs x {} lanes on a {}-port mesh: the verilated controller is built for 20 or 32 links on 32 ports",
                     s.xpus, s.lanes_per_xpu, s.mesh_ports);
}

ServerSim::ServerSim(const ServerConfig& cfg) : cfg_(cfg), rng_(cfg.seed ^ 0x5E5E) {
  const auto& s = cfg_.shape;
  int n_links = s.xpus * s.lanes_per_xpu;
  n_links_ = n_links;
  program_lane_.assign(static_cast<size_t>(n_links), 0);
  if (cfg_.mesh.ports != s.mesh_ports)
    throw std::invalid_argument(fmt::format("server: mesh has {} ports, shape says {}", cfg_.mesh.ports, s.mesh_ports));
  if (n_links > s.mesh_ports)
    throw std::invalid_argument(fmt::format("server: {} XPU lanes do not fit a {}-port mesh", n_links, s.mesh_ports));
  if (cfg_.fibre_latency_cycles < 1) throw std::invalid_argument("server: fibre_latency_cycles must be >= 1");
  mesh_ = std::make_unique<PhotonicMesh>(cfg_.mesh);
  for (int p = 0; p < s.mesh_ports; ++p) mesh_->set_input_lit(p, false);
  alive_.assign(static_cast<size_t>(s.xpus), true);
  for (int i = 0; i < n_links; ++i) rx_source_.push_back(i);

  if (std::string why = unsupported_shape(s); !why.empty()) throw std::invalid_argument("server: " + why);
  const bool wide = n_links == 32;
  if (wide && (cfg_.engine != ServerEngine::Fast || cfg_.trace_capable))
    throw std::invalid_argument("server: the 32-link controller runs on the fast engine, without waveforms");
  if (cfg_.threads < 1 || cfg_.threads > 64)
    throw std::invalid_argument(fmt::format("server: threads must be in [1, 64], got {}", cfg_.threads));
  if (cfg_.engine == ServerEngine::Reference && cfg_.threads != 1)
    throw std::invalid_argument("server: the reference engine runs on one thread");
  if (cfg_.engine == ServerEngine::Fast) impl_ = make_fast_engine(*this);
  else impl_ = make_reference_engine(*this);
}

ServerSim::~ServerSim() { impl_->finish(); }

void ServerSim::start_waveform(const std::string& path) { impl_->start_waveform(path); }
void ServerSim::stop_waveform() { impl_->stop_waveform(); }
bool ServerSim::waveform_on() const { return impl_->waveform_on(); }

void ServerSim::start_read(uint32_t addr) {
  if (impl_->bus_busy()) throw std::logic_error("server: bus transaction already in flight");
  impl_->start_read(addr);
}

void ServerSim::start_write(uint32_t addr, uint32_t data) {
  if (impl_->bus_busy()) throw std::logic_error("server: bus transaction already in flight");
  impl_->start_write(addr, data);
}

bool ServerSim::bus_busy() const { return impl_->bus_busy() || bus_result_.has_value(); }

std::optional<AxilResult> ServerSim::take_bus_result() {
  auto r = bus_result_;
  bus_result_.reset();
  return r;
}

bool ServerSim::irq() const { return impl_->irq(); }

void ServerSim::kill_xpu(int xpu) {
  if (xpu < 0 || xpu >= cfg_.shape.xpus) throw std::invalid_argument(fmt::format("no XPU {}", xpu));
  alive_[static_cast<size_t>(xpu)] = false;
  for (int l = 0; l < cfg_.shape.lanes_per_xpu; ++l) impl_->source(xpu * cfg_.shape.lanes_per_xpu + l).stop();
}

void ServerSim::set_lane_program(LaneProgram* p) {
  if (p && cfg_.engine == ServerEngine::Fast && cfg_.threads > 1)
    throw std::invalid_argument(fmt::format("XPU programs run on one thread, not {}: an XPU's lanes share its memory", cfg_.threads));
  program_ = p;
  for (int i = 0; i < n_links_; ++i) program_lane_[static_cast<size_t>(i)] = p && p->owns(i);
  if (p) p->attach(*this);
}

void ServerSim::set_lane_ber(int link, double ber) {
  if (link < 0 || link >= n_links_) throw std::invalid_argument(fmt::format("no link {}", link));
  impl_->lane_fault(link).errors.set_ber(ber);
}

void ServerSim::swap_lanes(int a, int b) {
  if (a < 0 || a >= n_links_ || b < 0 || b >= n_links_) throw std::invalid_argument(fmt::format("no link {} or {}", a, b));
  std::swap(rx_source_[static_cast<size_t>(a)], rx_source_[static_cast<size_t>(b)]);
}

void ServerSim::dark_lane(int link, uint64_t cycles) {
  if (link < 0 || link >= n_links_) throw std::invalid_argument(fmt::format("no link {}", link));
  auto& f = impl_->lane_fault(link);
  f.dark_until_cycle = std::max(f.dark_until_cycle, cycle_ + cycles);
}

void ServerSim::start_datagram(std::vector<uint8_t> datagram) {
  if (datagram_busy()) throw std::logic_error("server: a datagram is already in flight");
  impl_->board_port().start(std::move(datagram));
}

bool ServerSim::datagram_busy() const {
  const BoardPort& p = impl_->board_port();
  return p.busy() || p.outcome_ready();
}

std::optional<DatagramOutcome> ServerSim::take_datagram_outcome() { return impl_->board_port().take_outcome(); }

const std::optional<EmuAccess>& ServerSim::emulator_access() const { return impl_->board_port().emulator_access(); }

void ServerSim::answer_emulator(bool ok, uint32_t read_data) { impl_->board_port().answer_emulator(ok, read_data); }

const BoardPort& ServerSim::board_port() const { return impl_->board_port(); }

uint64_t ServerSim::step(uint64_t max_cycles) {
  irq_rose_ = bus_done_ = link_changed_ = program_event_ = board_event_ = false;
  if (program_) {
    const uint64_t wake = program_->wake_cycle();
    if (wake > cycle_ && wake - cycle_ < max_cycles) max_cycles = wake - cycle_;
  }
  const uint64_t ran = max_cycles ? impl_->run(*this, max_cycles) : 0;
  if (program_) program_->after_step(*this);
  return ran;
}

ServerProfile ServerSim::profile() const { return impl_->profile(); }

ServerProfile ServerProfile::operator-(const ServerProfile& o) const {
  ServerProfile d;
  d.cycles = cycles - o.cycles;
  d.step_s = step_s - o.step_s;
  d.links_s = links_s - o.links_s;
  d.controller_s = controller_s - o.controller_s;
  d.mesh_s = mesh_s - o.mesh_s;
  d.xpu_s = xpu_s - o.xpu_s;
  d.wait_s = wait_s - o.wait_s;
  d.stage_s = stage_s - o.stage_s;
  d.checkpoint_s = checkpoint_s - o.checkpoint_s;
  d.checkpoint_link_min_s = checkpoint_link_min_s;  // a minimum over the run, not a sum
  d.windows = windows - o.windows;
  d.rollbacks = rollbacks - o.rollbacks;
  return d;
}

void ServerSim::refresh_light() {
  light_ = mesh_->propagate(now_ns());
  light_dirty_ = false;
  last_light_cycle_ = cycle_;
}

LinkReport ServerSim::link_report(int i) const {
  auto e = impl_->link_view(i);
  const auto& src = impl_->source(i);
  const auto& sb = impl_->board(i);
  return LinkReport{e.state, e.reason, e.peer, e.frames_tx, e.frames_rx, e.crc_errors, e.replays, e.retrains,
                    src.messages_sent(), sb.messages(), sb.errors(), sb.skipped_words(), sb.resyncs(), sb.first_error()};
}

link::LinkState ServerSim::link_state(int i) const {
  return impl_->link_view(i).state;
}

EndpointIdentity ServerSim::link_peer(int i) const { return impl_->link_view(i).peer; }

uint64_t ServerSim::scoreboard_errors() const {
  uint64_t n = 0;
  for (int i = 0; i < links(); ++i)
    if (alive_[static_cast<size_t>(i / cfg_.shape.lanes_per_xpu)]) n += impl_->board(i).errors();
  return n;
}

uint64_t ServerSim::messages_delivered() const {
  uint64_t n = 0;
  for (int i = 0; i < links(); ++i) n += impl_->board(i).messages();
  return n + (program_ ? program_->messages_delivered() : 0);
}

}  // namespace mxtb::sim
