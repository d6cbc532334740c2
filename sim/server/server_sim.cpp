// ServerSim: the emulated server's checks and its users' view; its engine (sim/server/engine.h)
// computes the clocks on the state they share (sim/server/server_state.h).
#include "sim/server/server_sim.h"

#include "sim/server/engine.h"
#include "sim/server/server_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace mxtb::sim {

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
  // The controller models there are (rtl/models.cmake): 20 links (every engine) and 32 links
  // (the fast engine without waveforms), both on the 32-port mesh.
  const int links = s.links();
  if (s.mesh_ports == 32 && (links == 20 || links == 32)) return "";
  return fmt::format("{} XPUs x {} lanes on a {}-port mesh: the verilated controller is built for 20 or 32 links on 32 ports",
                     s.xpus, s.lanes_per_xpu, s.mesh_ports);
}

ServerState::ServerState(const ServerConfig& config)
    : cfg(config),
      n_links(config.shape.xpus * config.shape.lanes_per_xpu),
      rng(config.seed ^ 0x5E5E),
      fibres(config.fibre_ports, n_links, config.shape.mesh_ports, config.fibre_window_cycles, config.seed ^ 0xF1B7E) {
  const auto& s = cfg.shape;
  program_lane.assign(static_cast<size_t>(n_links), 0);
  if (cfg.mesh.ports != s.mesh_ports)
    throw std::invalid_argument(fmt::format("server: mesh has {} ports, shape says {}", cfg.mesh.ports, s.mesh_ports));
  if (n_links > s.mesh_ports)
    throw std::invalid_argument(fmt::format("server: {} XPU lanes do not fit a {}-port mesh", n_links, s.mesh_ports));
  if (cfg.fibre_latency_cycles < 1) throw std::invalid_argument("server: fibre_latency_cycles must be >= 1");
  mesh = std::make_unique<PhotonicMesh>(cfg.mesh);
  for (int p = 0; p < s.mesh_ports; ++p) mesh->set_input_lit(p, false);
  alive.assign(static_cast<size_t>(s.xpus), true);
  for (int i = 0; i < n_links; ++i) rx_source.push_back(i);
  if (cfg.xpu_base < 0 || cfg.xpu_base + s.xpus > 0xFF)
    throw std::invalid_argument(fmt::format("server: XPUs {}..{} do not fit the link layers' 8-bit XPU numbers below 255",
                                            cfg.xpu_base, cfg.xpu_base + s.xpus - 1));
}

ServerSim::ServerSim(const ServerConfig& cfg) : st_(std::make_unique<ServerState>(cfg)) {
  const ServerConfig& c = st_->cfg;
  if (std::string why = unsupported_shape(c.shape); !why.empty()) throw std::invalid_argument("server: " + why);
  const bool wide = st_->n_links == 32;
  if (wide && (c.engine != ServerEngine::Fast || c.trace_capable))
    throw std::invalid_argument("server: the 32-link controller runs on the fast engine, without waveforms");
  if (c.threads < 1 || c.threads > 64)
    throw std::invalid_argument(fmt::format("server: threads must be in [1, 64], got {}", c.threads));
  if (c.engine == ServerEngine::Reference && c.threads != 1)
    throw std::invalid_argument("server: the reference engine runs on one thread");
  if (st_->fibres.any() && c.threads != 1)
    throw std::invalid_argument(fmt::format("server: a server joined to fibres runs on one thread, not {} (a rack runs its servers side by side)", c.threads));
  if (c.engine == ServerEngine::Fast) impl_ = make_fast_engine(*st_);
  else impl_ = make_reference_engine(*st_);
}

ServerSim::~ServerSim() { impl_->finish(); }

uint64_t ServerSim::cycle() const { return st_->cycle; }
double ServerSim::period_ns() const { return st_->period_ns(); }
double ServerSim::now_ns() const { return st_->now_ns(); }
void ServerSim::set_emulator_responder(EmuResponder r) { st_->emu_responder = std::move(r); }
bool ServerSim::board_event() const { return st_->stops.board_event; }
bool ServerSim::bus_result_ready() const { return st_->bus_result.has_value(); }
bool ServerSim::irq_rose() const { return st_->stops.irq_rose; }
bool ServerSim::link_changed() const { return st_->stops.link_changed; }
bool ServerSim::xpu_alive(int xpu) const { return st_->alive[static_cast<size_t>(xpu)]; }
int ServerSim::links() const { return st_->n_links; }
const std::vector<LinkTransition>& ServerSim::transitions() const { return st_->transitions; }
uint64_t ServerSim::dac_writes() const { return st_->dac_writes; }
uint64_t ServerSim::pd_reads() const { return st_->pd_reads; }
const PhotonicMesh& ServerSim::mesh() const { return *st_->mesh; }
FibrePorts& ServerSim::fibres() { return st_->fibres; }

const FibrePorts& ServerSim::fibres() const { return st_->fibres; }
const ServerConfig& ServerSim::config() const { return st_->cfg; }

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

bool ServerSim::bus_busy() const { return impl_->bus_busy() || st_->bus_result.has_value(); }

std::optional<AxilResult> ServerSim::take_bus_result() {
  auto r = st_->bus_result;
  st_->bus_result.reset();
  return r;
}

bool ServerSim::irq() const { return impl_->irq(); }

void ServerSim::kill_xpu(int xpu) {
  if (xpu < 0 || xpu >= st_->cfg.shape.xpus) throw std::invalid_argument(fmt::format("no XPU {}", xpu));
  st_->alive[static_cast<size_t>(xpu)] = false;
  const int lanes = st_->cfg.shape.lanes_per_xpu;
  for (int l = 0; l < lanes; ++l) impl_->source(xpu * lanes + l).stop();
}

void ServerSim::set_lane_program(LaneProgram* p) {
  const ServerConfig& c = st_->cfg;
  if (p && c.engine == ServerEngine::Fast && c.threads > 1)
    throw std::invalid_argument(fmt::format("XPU programs run on one thread, not {}: an XPU's lanes share its memory", c.threads));
  st_->program = p;
  for (int i = 0; i < st_->n_links; ++i) st_->program_lane[static_cast<size_t>(i)] = p && p->owns(i);
  if (p) p->attach(*this);
}

void ServerSim::set_lane_ber(int link, double ber) {
  if (link < 0 || link >= st_->n_links) throw std::invalid_argument(fmt::format("no link {}", link));
  impl_->lane_fault(link).errors.set_ber(ber);
}

void ServerSim::swap_lanes(int a, int b) {
  const int n = st_->n_links;
  if (a < 0 || a >= n || b < 0 || b >= n) throw std::invalid_argument(fmt::format("no link {} or {}", a, b));
  std::swap(st_->rx_source[static_cast<size_t>(a)], st_->rx_source[static_cast<size_t>(b)]);
}

void ServerSim::dark_lane(int link, uint64_t cycles) {
  if (link < 0 || link >= st_->n_links) throw std::invalid_argument(fmt::format("no link {}", link));
  auto& f = impl_->lane_fault(link);
  f.dark_until_cycle = std::max(f.dark_until_cycle, st_->cycle + cycles);
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
  st_->stops = ServerState::Stops{};
  if (LaneProgram* program = st_->program) {
    const uint64_t now = st_->cycle;
    const uint64_t wake = program->wake_cycle();
    if (wake > now && wake - now < max_cycles) max_cycles = wake - now;
  }
  const uint64_t ran = max_cycles ? impl_->run(max_cycles) : 0;
  if (st_->program) st_->program->after_step(*this);
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

LinkReport ServerSim::link_report(int i) const {
  auto e = impl_->link_view(i);
  const auto& src = impl_->source(i);
  const auto& sb = impl_->scoreboard(i);
  return LinkReport{e.state, e.reason, e.peer, e.frames_tx, e.frames_rx, e.crc_errors, e.replays, e.retrains,
                    src.messages_sent(), sb.messages(), sb.errors(), sb.words_lost(), sb.skipped_words(), sb.resyncs(), sb.first_error()};
}

link::LinkState ServerSim::link_state(int i) const {
  return impl_->link_view(i).state;
}

EndpointIdentity ServerSim::link_peer(int i) const { return impl_->link_view(i).peer; }

template <typename Count>
uint64_t ServerSim::sum_over_living_links(Count count) const {
  uint64_t n = 0;
  for (int i = 0; i < links(); ++i)
    if (st_->alive[static_cast<size_t>(i / st_->cfg.shape.lanes_per_xpu)]) n += count(impl_->scoreboard(i));
  return n;
}

uint64_t ServerSim::scoreboard_errors() const {
  return sum_over_living_links([](const Scoreboard& sb) { return sb.errors(); });
}

uint64_t ServerSim::scoreboard_words_lost() const {
  return sum_over_living_links([](const Scoreboard& sb) { return sb.words_lost(); });
}

uint64_t ServerSim::messages_delivered() const {
  uint64_t n = 0;
  for (int i = 0; i < links(); ++i) n += impl_->scoreboard(i).messages();
  return n + (st_->program ? st_->program->messages_delivered() : 0);
}

}  // namespace mxtb::sim
