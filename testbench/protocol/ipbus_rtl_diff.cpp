#include "testbench/protocol/ipbus_rtl_diff.h"

#include "protocol/board_map.h"
#include "rtl/cov/coverage_dump.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "Vipbus_transactor.h"
#ifdef MXTB_IPBUS_THREE_BUFFERS
#include "Vipbus_transactor_b3.h"
#endif
#include "verilated.h"

namespace mxtb::testbench::ipbus_diff {

using ipbus::InfoCode;
using ipbus::TxType;
using protocol::kControllerWords;
using protocol::kEmulatorBase;
using protocol::kEmulatorWords;
using protocol::kRamBase;
using protocol::kRamWords;

namespace {

bool is_write(TxType t) { return t == TxType::Write || t == TxType::NonIncWrite; }
bool is_rmw(TxType t) { return t == TxType::RmwBits || t == TxType::RmwSum; }
bool incrementing(TxType t) { return t == TxType::Read || t == TxType::Write; }
InfoCode error_for(TxType t) { return is_write(t) ? InfoCode::WriteError : InfoCode::ReadError; }

// The generated register rules of one word of the controller or emulator window (nullopt: a hole).
struct Rule {
  bool readable, writable;
};
std::optional<Rule> rule_at(uint32_t addr) {
  switch (BoardRegisters::window_of(addr)) {
    case BoardRegisters::Window::Controller: {
      const auto* r = mxtb::ocs::register_at(addr * 4);
      if (!r) return std::nullopt;
      return Rule{r->access != mxtb::ocs::Access::WO, r->access != mxtb::ocs::Access::RO};
    }
    case BoardRegisters::Window::Emulator: {
      const auto* r = mxtb::emu::register_at((addr - kEmulatorBase) * 4);
      if (!r) return std::nullopt;
      return Rule{r->access != mxtb::emu::Access::WO, r->access != mxtb::emu::Access::RO};
    }
    case BoardRegisters::Window::Ram: return Rule{true, true};
    case BoardRegisters::Window::None: break;
  }
  return std::nullopt;
}

std::string name_of(uint32_t addr) {
  switch (BoardRegisters::window_of(addr)) {
    case BoardRegisters::Window::Ram: return fmt::format("ram[{}]", addr - kRamBase);
    case BoardRegisters::Window::Controller: {
      const auto* r = mxtb::ocs::register_at(addr * 4);
      if (!r) return fmt::format("{:#07x} (controller hole)", addr);
      if (r->count == 1) return std::string(r->name);
      return fmt::format("{}[{}]", r->name, addr - r->offset / 4);
    }
    case BoardRegisters::Window::Emulator: {
      const auto* r = mxtb::emu::register_at((addr - kEmulatorBase) * 4);
      if (!r) return fmt::format("{:#07x} (emulator hole)", addr);
      if (r->count == 1) return fmt::format("emu.{}", r->name);
      return fmt::format("emu.{}[{}]", r->name, addr - kEmulatorBase - r->offset / 4);
    }
    case BoardRegisters::Window::None: break;
  }
  return fmt::format("{:#010x} (outside the windows)", addr);
}

}  // namespace

std::string to_string(const BusAccess& a) {
  return fmt::format("{} {:#07x} {:<22} {:#010x}{}", a.write ? "W" : "R", a.addr, name_of(a.addr), a.data, a.ok ? "" : "  ERROR");
}

std::string hex(const std::vector<uint8_t>& bytes) {
  std::string s;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i && i % 4 == 0) s += ' ';
    s += fmt::format("{:02x}", bytes[i]);
  }
  return s;
}

uint32_t tx_header(TxType t, uint32_t words, uint16_t id, InfoCode info) {
  return ipbus::encode(ipbus::TxHeader{static_cast<uint16_t>(id & 0xFFF), static_cast<uint8_t>(words), t, info});
}
uint32_t packet_header(ipbus::PacketType t, uint16_t id) { return ipbus::encode(ipbus::PacketHeader{t, id}); }

// ---------------------------------------------------------------------------------------------
// BoardRegisters

BoardRegisters::BoardRegisters(uint64_t fill_seed)
    : controller_(kControllerWords), emulator_(kEmulatorWords), ram_(kRamWords) {
  std::mt19937_64 rng(fill_seed);
  for (auto* v : {&controller_, &emulator_, &ram_})
    for (auto& w : *v) w = static_cast<uint32_t>(rng());
}

BoardRegisters::Window BoardRegisters::window_of(uint32_t addr) {
  if (addr < protocol::kControllerBase + kControllerWords) return Window::Controller;
  if (addr >= kEmulatorBase && addr < kEmulatorBase + kEmulatorWords) return Window::Emulator;
  if (addr >= kRamBase && addr < kRamBase + kRamWords) return Window::Ram;
  return Window::None;
}

bool BoardRegisters::readable(uint32_t addr) {
  auto r = rule_at(addr);
  return r && r->readable;
}
bool BoardRegisters::writable(uint32_t addr) {
  auto r = rule_at(addr);
  return r && r->writable;
}

uint32_t* BoardRegisters::slot(uint32_t addr) {
  switch (window_of(addr)) {
    case Window::Controller: return &controller_[addr];
    case Window::Emulator: return &emulator_[addr - kEmulatorBase];
    case Window::Ram: return &ram_[addr - kRamBase];
    case Window::None: break;
  }
  return nullptr;
}

uint32_t BoardRegisters::peek(uint32_t addr) const {
  auto* p = const_cast<BoardRegisters*>(this)->slot(addr);
  return p ? *p : 0;
}

std::optional<uint32_t> BoardRegisters::read(uint32_t addr) {
  bool ok = readable(addr) && !refused.count(addr);
  uint32_t v = ok ? *slot(addr) : 0;
  log.push_back({false, addr, v, ok});
  if (!ok) return std::nullopt;
  return v;
}

bool BoardRegisters::write(uint32_t addr, uint32_t data) {
  bool ok = writable(addr) && !refused.count(addr) && !refused_writes.count(addr);
  if (ok) *slot(addr) = data;
  log.push_back({true, addr, data, ok});
  return ok;
}

std::string BoardRegisters::compare_contents(const BoardRegisters& o) const {
  auto first = [&](const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, uint32_t base) -> std::string {
    auto m = std::mismatch(a.begin(), a.end(), b.begin());
    if (m.first == a.end()) return {};
    uint32_t addr = base + static_cast<uint32_t>(m.first - a.begin());
    return fmt::format("{} ({:#07x}): {:#010x} vs {:#010x}", name_of(addr), addr, *m.first, *m.second);
  };
  for (auto s : {first(controller_, o.controller_, 0), first(emulator_, o.emulator_, kEmulatorBase), first(ram_, o.ram_, kRamBase)})
    if (!s.empty()) return s;
  return {};
}

void BoardRegisters::copy_contents_from(const BoardRegisters& o) {
  controller_ = o.controller_;
  emulator_ = o.emulator_;
  ram_ = o.ram_;
}

// ---------------------------------------------------------------------------------------------
// BoardPort: sim/emulator/ipbus_server.cpp execute() (the RAM and its span rule) and sim/emulator/cpp_target.cpp
// handle(), controller_access(), emulator_access() (the windows, the register rules, word by word).

bool BoardPort::checks_pass(const Access& a) const {
  const bool inc = incrementing(a.type), rmw = is_rmw(a.type), write = is_write(a.type);
  // The RAM: a block of `words` (0 allowed) must end inside it; nothing else is checked.
  const uint32_t ram_span = inc ? a.words : 1;
  if (a.addr >= kRamBase && uint64_t{a.addr} + ram_span <= uint64_t{kRamBase} + kRamWords) return true;
  if (a.addr >= kRamBase && a.addr < kRamBase + kRamWords) return false;  // runs off the RAM's end
  // The register windows: the block (at least one word) inside one window, then every word it
  // touches a register allowing the access.
  const uint32_t span = inc ? std::max<uint32_t>(a.words, 1) : 1;
  const bool controller = a.addr < protocol::kControllerBase + kControllerWords && uint64_t{a.addr} + span <= kControllerWords;
  const bool emulator = !controller && a.addr >= kEmulatorBase && uint64_t{a.addr} + span <= uint64_t{kEmulatorBase} + kEmulatorWords;
  if (!controller && !emulator) return false;
  const uint32_t checked = inc ? a.words : std::min<uint32_t>(a.words, 1);
  for (uint32_t i = 0; i < checked; ++i) {
    auto r = rule_at(a.addr + i);
    if (!r) return false;
    if ((write || rmw) && !r->writable) return false;
    if ((!write || rmw) && !r->readable) return false;
  }
  return true;
}

InfoCode BoardPort::run_words(const Access& a, std::vector<uint32_t>& out) {
  const bool inc = incrementing(a.type), rmw = is_rmw(a.type);
  for (uint32_t i = 0; i < a.words || (rmw && i == 0); ++i) {
    const uint32_t word = inc ? a.addr + i : a.addr;
    switch (a.type) {
      case TxType::Read:
      case TxType::NonIncRead: {
        auto v = board_.read(word);
        if (!v) return error_for(a.type);
        out.push_back(*v);
        break;
      }
      case TxType::Write:
      case TxType::NonIncWrite:
        if (!board_.write(word, a.body[i])) return error_for(a.type);
        break;
      case TxType::RmwBits:
      case TxType::RmwSum: {
        auto v = board_.read(word);
        if (!v) return error_for(a.type);
        out.push_back(*v);
        uint32_t nv = a.type == TxType::RmwBits ? (*v & a.body[0]) | a.body[1] : *v + a.body[0];
        if (!board_.write(word, nv)) return error_for(a.type);
        break;
      }
    }
    if (rmw) break;
  }
  return InfoCode::Success;
}

InfoCode BoardPort::execute(const Access& a, std::vector<uint32_t>& out) {
  if (!checks_pass(a)) return error_for(a.type);
  InfoCode code = run_words(a, out);
  if (code != InfoCode::Success) out.clear();  // as controller_access: an error answers no data
  return code;
}

// ---------------------------------------------------------------------------------------------
// CppSide

std::string describe_kind(uint8_t kind, uint8_t fault) {
  static const char* kinds[] = {"control", "status", "resend", "dropped"};
  std::string s = kind < 4 ? kinds[kind] : fmt::format("kind {}", kind);
  if (fault == Answer::kNoFault) return s + ", no fault";
  if (fault < static_cast<uint8_t>(ipbus::Fault::kCount))
    return fmt::format("{}, fault {} ({})", s, fault, ipbus::to_string(static_cast<ipbus::Fault>(fault)));
  return fmt::format("{}, fault {} (no such fault)", s, fault);
}

CppSide::CppSide(uint64_t fill_seed, uint32_t n_buffers)
    : n_buffers_(n_buffers), board_(fill_seed), target_(std::make_unique<ipbus::Target>(port_, n_buffers)) {}

void CppSide::reset() { target_ = std::make_unique<ipbus::Target>(port_, n_buffers_); }

Answer CppSide::handle(const std::vector<uint8_t>& datagram) {
  const ipbus::TargetStats before = target_->stats();
  Answer a;
  a.reply = target_->handle(datagram.data(), datagram.size());
  const ipbus::TargetStats& after = target_->stats();
  if (after.control > before.control) a.kind = Answer::kKindControl;
  else if (after.status > before.status) a.kind = Answer::kKindStatus;
  else if (after.resends_served > before.resends_served) a.kind = Answer::kKindResend;
  else a.kind = Answer::kKindDropped;
  for (size_t i = 0; i < after.faults.size(); ++i)
    if (after.faults[i] > before.faults[i]) {
      a.fault = static_cast<uint8_t>(i);
      break;
    }
  return a;
}

// ---------------------------------------------------------------------------------------------
// RtlSide: the verilated transactor, one clock cycle at a time.


// What RtlSide asks of its model, whichever N_BUFFERS the model was verilated with.
struct RtlSide::Impl {
  virtual ~Impl() = default;
  virtual Answer handle(const std::vector<uint8_t>& d) = 0;
  virtual void reset() = 0;
  virtual BoardRegisters& registers() = 0;
  virtual uint64_t cycles() const = 0;
  virtual std::string idle(uint64_t n) = 0;
  virtual bool bus_outstanding() const = 0;
};

namespace {

// The verilated transactor and its AXI4-Lite slave. Model: a class Verilator made of
// ipbus_transactor (the ports are the same at any N_BUFFERS). kCoverage: whether the model's
// counters are written (the 3-buffer model is never built for coverage).
template <class Model, bool kCoverage>
struct RtlModel final : RtlSide::Impl {
  RtlTiming timing;
  BoardRegisters board;
  std::mt19937_64 rng;
  std::unique_ptr<VerilatedContext> ctx;
  std::unique_ptr<Model> top;
  uint64_t cycle = 0;

  // The AXI4-Lite slave: at most one access in its hands, answered after a drawn delay.
  struct Slave {
    bool aw_taken = false, w_taken = false;
    uint32_t aw_addr = 0, w_data = 0;
    uint8_t w_strb = 0;
    bool b_pending = false, r_pending = false;
    uint32_t b_delay = 0, r_delay = 0;
    uint8_t b_resp = 0, r_resp = 0;
    uint32_t r_data = 0;
  } slave;
  // A channel whose valid was high without a handshake at the last edge: it must still be valid
  // with the same payload (AXI: once asserted, valid and its payload hold until ready).
  struct Waiting {
    bool waiting = false;
    uint64_t a = 0, b = 0;
  } aw_wait, w_wait, ar_wait, out_wait;
  std::string violation;  // the first AXI rule broken in this datagram

  RtlModel(uint64_t fill_seed, RtlTiming t) : timing(t), board(fill_seed), rng(t.seed) { build(); }
  // A coverage build's counters live in the model: written while it still exists (a no-op in the
  // ordinary build; the coverage variant, ipbus_rtl_diff_tests_cov, links mxtb_rtl_coverage_on).
  // Verilator 5.006 erases a model's scopes from the thread's current context, not the model's
  // own: with a second model alive (built, run or destroyed since), that is another context, or
  // a freed one. So the model's own context is made current before it goes.
  ~RtlModel() override {
    dump_coverage();
    if (ctx) own_thread_context();
    top.reset();
  }
  RtlModel(const RtlModel&) = delete;
  RtlModel& operator=(const RtlModel&) = delete;
  void dump_coverage() {
    if (kCoverage && ctx && top) mxtb::rtl::write_coverage(*ctx, "ipbus_rtl_diff");
  }

  void build() {
    dump_coverage();
    if (ctx) own_thread_context();
    top.reset();  // the model before its context
    ctx.reset();
    ctx = std::make_unique<VerilatedContext>();
    ctx->fatalOnError(false);  // a failed assertion sets gotError(): reported as the datagram's failure
    top = std::make_unique<Model>(ctx.get(), "ipbus_transactor");
    cycle = 0;
    pulse_reset();
  }

  // The board's reset on the running model: registers to their reset values, the block RAMs (the
  // request buffer and the kept replies) keeping what they hold, as an FPGA's do. The slave's
  // access in flight, if any, goes with it (the board's bus is reset too).
  void pulse_reset() {
    slave = {};
    aw_wait = w_wait = ar_wait = out_wait = {};
    violation.clear();
    idle_inputs();
    top->rst_ni = 0;
    for (int i = 0; i < 8; ++i) clock();
    top->rst_ni = 1;
    clock();
  }

  bool chance(double p) { return p > 0 && static_cast<double>(rng() >> 11) * 0x1.0p-53 < p; }
  uint32_t junk() { return static_cast<uint32_t>(rng()); }

  void idle_inputs() {
    top->s_axis_tvalid = 0;
    top->s_axis_tdata = 0;
    top->s_axis_tkeep = 0;
    top->s_axis_tlast = 0;
    top->m_axis_tready = 0;
    top->m_axil_awready = top->m_axil_wready = top->m_axil_arready = 0;
    top->m_axil_bvalid = top->m_axil_rvalid = 0;
    top->m_axil_bresp = top->m_axil_rresp = 0;
    top->m_axil_rdata = 0;
  }

  // One cycle with the inputs as set: low phase, then the rising edge.
  void clock() {
    top->clk_i = 0;
    top->eval();
    top->clk_i = 1;
    top->eval();
    ++cycle;
  }

  void broke(const std::string& rule) {
    if (violation.empty()) violation = fmt::format("cycle {}: {}", cycle, rule);
  }

  void check_held(Waiting& w, const char* channel, bool valid, uint64_t a, uint64_t b, bool fire) {
    if (w.waiting) {
      if (!valid) broke(fmt::format("{}VALID dropped before {}READY (valid must hold until ready)", channel, channel));
      else if (a != w.a || b != w.b)
        broke(fmt::format("{} payload changed while {}VALID waited for {}READY ({:#x}/{:#x} -> {:#x}/{:#x})", channel, channel,
                          channel, w.a, w.b, a, b));
    }
    w = {valid && !fire, a, b};
  }

  uint32_t response_delay() { return timing.max_response_delay ? static_cast<uint32_t>(rng() % (timing.max_response_delay + 1)) : 0; }
  uint8_t error_response() { return chance(timing.decerr) ? 3 : 2; }  // DECERR or SLVERR

  std::string state() const {
    return fmt::format("awvalid {} wvalid {} arvalid {} bready {} rready {} s_axis_tready {} m_axis_tvalid {}; slave: aw {} w {} b {} r {}",
                       int{top->m_axil_awvalid}, int{top->m_axil_wvalid}, int{top->m_axil_arvalid}, int{top->m_axil_bready},
                       int{top->m_axil_rready}, int{top->s_axis_tready}, int{top->m_axis_tvalid}, slave.aw_taken, slave.w_taken,
                       slave.b_pending, slave.r_pending);
  }

  // The AXI4-Lite slave, one cycle: its outputs before the edge (drive_slave), the handshakes
  // the edge makes (sample_slave, after eval with the clock low), and its state after (slave_edge).
  struct SlaveOut {
    bool awready, wready, arready, bvalid, rvalid;
  };
  struct SlaveSeen {
    bool aw_fire, w_fire, ar_fire, b_fire, r_fire;
    uint32_t awaddr, araddr, wdata;
    uint8_t wstrb;
  };
  SlaveOut drive_slave() {
    SlaveOut o;
    o.awready = !chance(timing.axi_ready_stall) && !(timing.ready_only_when_free && slave.aw_taken) &&
                (timing.write_order != RtlTiming::WriteOrder::DataFirst || (slave.w_taken && !slave.b_pending));
    o.wready = !chance(timing.axi_ready_stall) && !(timing.ready_only_when_free && slave.w_taken) &&
               (timing.write_order != RtlTiming::WriteOrder::AddressFirst || (slave.aw_taken && !slave.b_pending));
    o.arready = !chance(timing.axi_ready_stall);
    o.bvalid = slave.b_pending && slave.b_delay == 0;
    o.rvalid = slave.r_pending && slave.r_delay == 0;
    top->m_axil_awready = o.awready;
    top->m_axil_wready = o.wready;
    top->m_axil_arready = o.arready;
    top->m_axil_bvalid = o.bvalid;
    top->m_axil_bresp = o.bvalid ? slave.b_resp : (junk() & 3);
    top->m_axil_rvalid = o.rvalid;
    top->m_axil_rresp = o.rvalid ? slave.r_resp : (junk() & 3);
    top->m_axil_rdata = o.rvalid ? slave.r_data : junk();
    return o;
  }
  SlaveSeen sample_slave(const SlaveOut& o) {
    SlaveSeen s;
    s.aw_fire = top->m_axil_awvalid && o.awready;
    s.w_fire = top->m_axil_wvalid && o.wready;
    s.ar_fire = top->m_axil_arvalid && o.arready;
    s.b_fire = o.bvalid && top->m_axil_bready;
    s.r_fire = o.rvalid && top->m_axil_rready;
    check_held(aw_wait, "AW", top->m_axil_awvalid, top->m_axil_awaddr, 0, s.aw_fire);
    check_held(w_wait, "W", top->m_axil_wvalid, top->m_axil_wdata, top->m_axil_wstrb, s.w_fire);
    check_held(ar_wait, "AR", top->m_axil_arvalid, top->m_axil_araddr, 0, s.ar_fire);
    s.awaddr = top->m_axil_awaddr;
    s.araddr = top->m_axil_araddr;
    s.wdata = top->m_axil_wdata;
    s.wstrb = top->m_axil_wstrb;
    return s;
  }
  void slave_edge(const SlaveSeen& s) {
    // AXI4-Lite: responses first, so that an access that starts at the edge its predecessor's
    // response is taken counts as the only one outstanding.
    if (s.b_fire) slave.b_pending = slave.aw_taken = slave.w_taken = false;
    if (s.r_fire) slave.r_pending = false;
    const bool write_open = slave.aw_taken || slave.w_taken, read_open = slave.r_pending;
    if (s.ar_fire) {
      if (read_open || write_open)
        broke(fmt::format("two transactions outstanding: AR {:#x} accepted while a {} is outstanding", s.araddr, read_open ? "read" : "write"));
      if (s.araddr % 4) broke(fmt::format("ARADDR {:#x} is not word aligned", s.araddr));
      auto v = board.read(s.araddr / 4);
      slave.r_pending = true;
      slave.r_delay = timing.silent.count(s.araddr / 4) ? timing.silent_delay : response_delay();
      slave.r_data = v ? *v : 0xBAD0BAD0u ^ junk();  // junk on an error: the RTL must not use it
      slave.r_resp = v ? 0 : error_response();
    }
    if (s.aw_fire) {
      if (read_open || slave.aw_taken)
        broke(fmt::format("two transactions outstanding: AW {:#x} accepted while a {} is outstanding", s.awaddr, read_open ? "read" : "write"));
      if (s.awaddr % 4) broke(fmt::format("AWADDR {:#x} is not word aligned", s.awaddr));
      slave.aw_taken = true;
      slave.aw_addr = s.awaddr;
    }
    if (s.w_fire) {
      if (read_open || slave.w_taken)
        broke(fmt::format("two transactions outstanding: W {:#x} accepted while a {} is outstanding", s.wdata, read_open ? "read" : "write"));
      if (s.wstrb != 0xF) broke(fmt::format("WSTRB {:#x}: IPbus writes whole words", s.wstrb));
      slave.w_taken = true;
      slave.w_data = s.wdata;
      slave.w_strb = s.wstrb;
    }
    if (slave.aw_taken && slave.w_taken && !slave.b_pending) {
      bool ok = board.write(slave.aw_addr / 4, slave.w_data);
      slave.b_pending = true;
      slave.b_delay = timing.silent.count(slave.aw_addr / 4) || timing.silent_writes.count(slave.aw_addr / 4) ? timing.silent_delay
                                                                                                         : response_delay();
      slave.b_resp = ok ? 0 : error_response();
    } else if (slave.b_pending && slave.b_delay && !(s.aw_fire || s.w_fire)) {
      --slave.b_delay;
    }
    if (slave.r_pending && slave.r_delay && !s.ar_fire) --slave.r_delay;
  }

  // What RtlSide asks (idle and handle below too).
  void reset() override {
    // A model that failed an assertion keeps its context's error: only a fresh one goes on.
    if (ctx->gotError()) build();
    else pulse_reset();
  }
  BoardRegisters& registers() override { return board; }
  uint64_t cycles() const override { return cycle; }
  bool bus_outstanding() const override { return slave.aw_taken || slave.w_taken || slave.b_pending || slave.r_pending; }

  // Cycles with no datagram: the source idle, the reply sink ready, the slave answering as ever
  // (a silent word's late response among them). Nothing may come out.
  std::string idle(uint64_t n) override {
    own_thread_context();
    violation.clear();
    std::string failure;
    for (uint64_t k = 0; k < n; ++k) {
      top->s_axis_tvalid = 0;
      top->s_axis_tdata = junk();
      top->s_axis_tkeep = junk() & 0xF;
      top->s_axis_tlast = junk() & 1;
      top->m_axis_tready = 1;
      const SlaveOut so = drive_slave();
      top->clk_i = 0;
      top->eval();
      const SlaveSeen seen = sample_slave(so);
      if (top->m_axis_tvalid) broke("a reply beat with no datagram in");
      if (top->stat_valid_o) broke("stat_valid_o with no datagram in");
      top->clk_i = 1;
      top->eval();
      ++cycle;
      if (ctx->gotError()) {
        failure = fmt::format("RTL assertion failed by cycle {} (Verilator's %Error line above names it)", cycle);
        break;
      }
      slave_edge(seen);
    }
    if (!violation.empty()) failure += (failure.empty() ? "" : "; ") + ("rule broken at " + violation);
    return failure;
  }

  // Verilator reports a failed assertion to the thread's context, which is the context constructed
  // last, not the model's: with other sides built (and gone) since, it would count the error in
  // another side's context, or in a freed one (a deadlock in errorCountInc). Ours, before any eval.
  void own_thread_context() { Verilated::threadContextp(ctx.get()); }

  Answer handle(const std::vector<uint8_t>& d) override {
    own_thread_context();
    Answer ans;
    violation.clear();
    const size_t n_beats = (d.size() + 3) / 4;
    size_t beat = 0;
    bool src_valid = false;
    uint32_t src_data = 0;
    uint8_t src_keep = 0;
    bool src_last = false;
    std::vector<uint8_t> reply;
    bool reply_done = false, stat_seen = false;
    uint64_t quiet = 0;
    const uint64_t start = cycle;

    while (true) {
      // ---- inputs for this cycle ----
      if (!src_valid && beat < n_beats && !chance(timing.in_gap)) {
        src_valid = true;
        const size_t at = beat * 4, n = std::min<size_t>(4, d.size() - at);
        src_data = junk();  // byte lanes past the datagram's end carry junk: the RTL must ignore them
        for (size_t i = 0; i < n; ++i) src_data = (src_data & ~(0xFFu << (24 - 8 * i))) | uint32_t{d[at + i]} << (24 - 8 * i);
        src_keep = static_cast<uint8_t>((0xF0u >> n) & 0xF);  // 1000, 1100, 1110, 1111
        src_last = beat + 1 == n_beats;
      }
      top->s_axis_tvalid = src_valid;
      top->s_axis_tdata = src_valid ? src_data : junk();
      top->s_axis_tkeep = src_valid ? (src_last ? src_keep : 0xF) : (junk() & 0xF);
      top->s_axis_tlast = src_valid ? src_last : (junk() & 1);
      top->m_axis_tready = !chance(timing.out_stall);
      const SlaveOut so = drive_slave();
      top->clk_i = 0;
      top->eval();

      // ---- what happens at this edge ----
      const bool in_fire = src_valid && top->s_axis_tready;
      const bool out_fire = top->m_axis_tvalid && top->m_axis_tready;
      const SlaveSeen seen = sample_slave(so);
      check_held(out_wait, "reply stream T", top->m_axis_tvalid, top->m_axis_tdata, top->m_axis_tlast, out_fire);
      const uint32_t out_data = top->m_axis_tdata;
      const bool out_last = top->m_axis_tlast;
      const bool stat = top->stat_valid_o;
      const uint8_t stat_kind = top->stat_kind_o, stat_fault = top->stat_fault_o;

      top->clk_i = 1;
      top->eval();
      ++cycle;
      if (ctx->gotError()) {
        ans.failure = fmt::format("RTL assertion failed by cycle {} (Verilator's %Error line above names it)", cycle);
        break;
      }

      // ---- the environment's state after the edge ----
      if (in_fire) {
        ++beat;
        src_valid = false;
      }
      if (out_fire) {
        if (reply_done) broke("reply beat after the reply's TLAST (a second reply for one datagram)");
        for (int s = 24; s >= 0; s -= 8) reply.push_back(static_cast<uint8_t>(out_data >> s));
        if (out_last) reply_done = true;
      }
      if (stat) {
        if (stat_seen) broke("a second stat_valid_o pulse for one datagram");
        if (beat < n_beats) broke(fmt::format("stat_valid_o with {} of {} request beats taken", beat, n_beats));
        stat_seen = true;
        ans.kind = stat_kind;
        ans.fault = stat_fault;
      }
      slave_edge(seen);

      // ---- done? ----
      if (beat == n_beats && stat_seen) {
        if (reply_done) break;
        if (reply.empty() && !top->m_axis_tvalid) {
          ++quiet;
          // A dropped datagram: a few quiet cycles show no reply follows. Anything else has a
          // reply coming: give it time, then say it never came.
          if (ans.kind == Answer::kKindDropped && quiet >= 8) break;
          if (quiet >= 4096) {
            broke(fmt::format("no reply within 4096 cycles of stat_valid_o ({})", describe_kind(ans.kind, ans.fault)));
            break;
          }
        } else {
          quiet = 0;
        }
      }
      if (cycle - start > timing.cycle_bound) {
        ans.failure = fmt::format(
            "transactor hung: {} cycles on one datagram ({} of {} request beats taken, stat_valid_o {}, {} reply bytes{}); {}",
            cycle - start, beat, n_beats, stat_seen ? "seen" : "not seen", reply.size(), reply_done ? " complete" : "", state());
        break;
      }
    }
    if (!reply.empty()) ans.reply = std::move(reply);
    ans.cycles = cycle - start;
    if (!violation.empty()) ans.failure += (ans.failure.empty() ? "" : "; ") + ("rule broken at " + violation);
    return ans;
  }
};

std::unique_ptr<RtlSide::Impl> make_model(uint64_t fill_seed, RtlTiming timing, uint32_t n_buffers) {
  if (!RtlSide::has_model(n_buffers))
    throw std::invalid_argument(fmt::format("RtlSide: no transactor model with N_BUFFERS {} in this build (16{})", n_buffers,
                                            RtlSide::has_model(3) ? " and 3" : ""));
#ifdef MXTB_IPBUS_THREE_BUFFERS
  if (n_buffers == 3) return std::make_unique<RtlModel<Vipbus_transactor_b3, false>>(fill_seed, timing);
#endif
  return std::make_unique<RtlModel<Vipbus_transactor, true>>(fill_seed, timing);
}

}  // namespace

bool RtlSide::has_model(uint32_t n_buffers) {
#ifdef MXTB_IPBUS_THREE_BUFFERS
  if (n_buffers == 3) return true;
#endif
  return n_buffers == 16;
}
RtlSide::RtlSide(uint64_t fill_seed, RtlTiming timing, uint32_t n_buffers) : impl_(make_model(fill_seed, timing, n_buffers)) {}
RtlSide::~RtlSide() = default;
Answer RtlSide::handle(const std::vector<uint8_t>& datagram) {
  if (datagram.empty()) throw std::invalid_argument("RtlSide::handle: an empty datagram cannot travel on AXI4-Stream");
  return impl_->handle(datagram);
}
void RtlSide::reset() { impl_->reset(); }
BoardRegisters& RtlSide::board() { return impl_->registers(); }
uint64_t RtlSide::cycles() const { return impl_->cycles(); }
std::string RtlSide::idle(uint64_t cycles) { return impl_->idle(cycles); }
bool RtlSide::bus_outstanding() const { return impl_->bus_outstanding(); }


// ---------------------------------------------------------------------------------------------
// Datagrams

const char* to_string(DatagramClass c) {
  switch (c) {
    case DatagramClass::Control: return "control";
    case DatagramClass::OutOfSequence: return "out of sequence";
    case DatagramClass::Status: return "status";
    case DatagramClass::Resend: return "resend";
    case DatagramClass::Truncated: return "truncated";
    case DatagramClass::StrayBytes: return "stray bytes";
    case DatagramClass::BadVersion: return "bad version";
    case DatagramClass::BadReserved: return "bad reserved bits";
    case DatagramClass::BadQualifier: return "bad qualifier";
    case DatagramClass::BadPacketType: return "bad packet type";
    case DatagramClass::BadStatusLength: return "bad status length";
    case DatagramClass::BadResendLength: return "bad resend length";
    case DatagramClass::BadTxHeader: return "bad transaction header";
    case DatagramClass::BadInfoCode: return "bad info code";
    case DatagramClass::RmwWords: return "rmw of words != 1";
    case DatagramClass::BodyPastEnd: return "body past the end";
    case DatagramClass::ReplyPastMtu: return "reply past the MTU";
    case DatagramClass::Oversized: return "oversized";
    case DatagramClass::RandomBytes: return "random bytes";
    case DatagramClass::kCount: break;
  }
  return "?";
}

namespace {

// Word addresses where accesses change from allowed to refused or between registers: every
// register's first and last word, the windows' ends, and the words beside them.
const std::vector<uint32_t>& edge_addresses() {
  static const std::vector<uint32_t> edges = [] {
    std::vector<uint32_t> e{0, kControllerWords, kEmulatorBase, kEmulatorBase + kEmulatorWords, kRamBase, kRamBase + kRamWords};
    for (const auto& r : mxtb::ocs::kRegisters) {
      e.push_back(r.offset / 4);
      e.push_back(r.offset / 4 + r.count);
    }
    for (const auto& r : mxtb::emu::kRegisters) {
      e.push_back(kEmulatorBase + r.offset / 4);
      e.push_back(kEmulatorBase + r.offset / 4 + r.count);
    }
    std::sort(e.begin(), e.end());
    e.erase(std::unique(e.begin(), e.end()), e.end());
    return e;
  }();
  return edges;
}

template <class Reg, size_t N>
uint32_t random_word_of(const Reg (&regs)[N], std::mt19937_64& rng, uint32_t base) {
  const auto& r = regs[rng() % N];
  return base + r.offset / 4 + static_cast<uint32_t>(rng() % r.count);
}

}  // namespace

DatagramGenerator::DatagramGenerator(uint64_t seed) : rng_(seed) {}

uint32_t DatagramGenerator::interesting_address(uint32_t words, bool inc) {
  const uint32_t span = inc ? std::max<uint32_t>(words, 1) : 1;
  const auto& edges = edge_addresses();
  const int delta = static_cast<int>(rng_() % 5) - 2;
  const uint32_t pick = static_cast<uint32_t>(rng_() % 100);
  if (pick < 30) return kRamBase + static_cast<uint32_t>(rng_() % (kRamWords - std::min(span, kRamWords) + 1));  // fits
  if (pick < 50) return edges[rng_() % edges.size()] + static_cast<uint32_t>(delta);                           // starts at an edge
  if (pick < 70) return edges[rng_() % edges.size()] - span + static_cast<uint32_t>(delta);                    // ends at one
  if (pick < 80) return random_word_of(mxtb::ocs::kRegisters, rng_, 0);
  if (pick < 87) return random_word_of(mxtb::emu::kRegisters, rng_, kEmulatorBase);
  if (pick < 90 && !hot_.empty()) {  // a block over a word that refuses its access
    auto it = hot_.begin();
    std::advance(it, static_cast<long>(rng_() % hot_.size()));
    return *it - static_cast<uint32_t>(rng_() % span);
  }
  if (pick < 96) return static_cast<uint32_t>(rng_() % (kRamBase + kRamWords + 16));
  return static_cast<uint32_t>(rng_());
}

std::vector<uint32_t> DatagramGenerator::random_transaction() {
  const auto type = static_cast<TxType>(rng_() % 6);
  uint32_t words = 1;
  if (!is_rmw(type)) {
    const uint32_t p = static_cast<uint32_t>(rng_() % 100);
    words = p < 12 ? 0 : p < 45 ? 1 : p < 77 ? 2 + static_cast<uint32_t>(rng_() % 7) : p < 95 ? 9 + static_cast<uint32_t>(rng_() % 56)
                                                                                          : 65 + static_cast<uint32_t>(rng_() % 191);
  }
  std::vector<uint32_t> t{tx_header(type, words, static_cast<uint16_t>(rng_())), interesting_address(words, incrementing(type))};
  const uint32_t body = ipbus::request_body_words(type, words) - 1;
  for (uint32_t i = 0; i < body; ++i) t.push_back(static_cast<uint32_t>(rng_()));
  return t;
}

std::vector<uint32_t> DatagramGenerator::control_packet(uint16_t id, size_t n_transactions) {
  std::vector<uint32_t> p{packet_header(ipbus::PacketType::Control, id)};
  for (size_t i = 0; i < n_transactions; ++i) {
    auto t = random_transaction();
    if (p.size() + t.size() > ipbus::kMtuWords) break;
    p.insert(p.end(), t.begin(), t.end());
  }
  return p;
}

std::vector<uint8_t> DatagramGenerator::bytes_of(const std::vector<uint32_t>& words) {
  return ipbus::to_bytes(words, rng_() & 1 ? ipbus::ByteOrder::Little : ipbus::ByteOrder::Big);
}

uint16_t DatagramGenerator::control_id(uint16_t next_expected_id) {
  if (rng_() % 4 == 0) return 0;
  sent_ids_.push_back(next_expected_id);
  if (sent_ids_.size() > 64) sent_ids_.erase(sent_ids_.begin());
  return next_expected_id;
}

Datagram DatagramGenerator::next(uint16_t next_expected_id) {
  static constexpr std::array<uint32_t, static_cast<size_t>(DatagramClass::kCount)> weights{
      40,  // Control
      3,   // OutOfSequence
      5,   // Status
      8,   // Resend
      4,   // Truncated
      3,   // StrayBytes
      2,   // BadVersion
      2,   // BadReserved
      2,   // BadQualifier
      2,   // BadPacketType
      2,   // BadStatusLength
      2,   // BadResendLength
      4,   // BadTxHeader
      4,   // BadInfoCode
      3,   // RmwWords
      4,   // BodyPastEnd
      3,   // ReplyPastMtu
      2,   // Oversized
      4,   // RandomBytes
  };
  uint32_t total = 0;
  for (auto w : weights) total += w;
  uint32_t r = static_cast<uint32_t>(rng_() % total);
  size_t c = 0;
  while (r >= weights[c]) r -= weights[c++];
  return make(static_cast<DatagramClass>(c), next_expected_id);
}

Datagram DatagramGenerator::make(DatagramClass c, uint16_t next_id) {
  using ipbus::PacketType;
  auto u32 = [&] { return static_cast<uint32_t>(rng_()); };
  auto below = [&](uint32_t n) { return static_cast<uint32_t>(rng_() % n); };
  auto n_tx = [&] { return 1 + static_cast<size_t>(below(20)); };
  // A packet header of any type with a valid layout, for the header-breaking classes.
  auto any_header = [&] {
    const uint32_t t = below(3);
    return packet_header(static_cast<PacketType>(t), t == 0 ? control_id(next_id) : static_cast<uint16_t>(u32()));
  };
  // Good transactions, then `bad` as the last one.
  auto with_bad_last = [&](const std::vector<uint32_t>& bad) {
    auto p = control_packet(control_id(next_id), below(4));
    p.insert(p.end(), bad.begin(), bad.end());
    return p;
  };
  Datagram d;
  d.cls = c;
  switch (c) {
    case DatagramClass::Control: d.bytes = bytes_of(control_packet(control_id(next_id), n_tx())); break;
    case DatagramClass::OutOfSequence: {
      uint16_t id;
      do id = static_cast<uint16_t>(below(4) == 0 ? next_id + 1 + below(3) : u32());  // near misses, and far ones
      while (id == 0 || id == next_id);
      d.bytes = bytes_of(control_packet(id, n_tx()));
      break;
    }
    case DatagramClass::Status: {
      std::vector<uint32_t> w(ipbus::kStatusWords, 0);
      w[0] = packet_header(PacketType::Status, below(4) == 0 ? static_cast<uint16_t>(u32()) : 0);
      if (below(5) == 0)
        for (size_t i = 1; i < w.size(); ++i) w[i] = u32();  // the body is not looked at
      d.bytes = bytes_of(w);
      break;
    }
    case DatagramClass::Resend: {
      uint16_t id = static_cast<uint16_t>(u32());
      const uint32_t p = below(100);
      if (p < 50 && !sent_ids_.empty()) id = sent_ids_[sent_ids_.size() - 1 - below(std::min<uint32_t>(16, static_cast<uint32_t>(sent_ids_.size())))];
      else if (p < 65 && sent_ids_.size() > 16) id = sent_ids_[below(static_cast<uint32_t>(sent_ids_.size()) - 16)];  // evicted
      else if (p < 75) id = 0;
      d.bytes = bytes_of({packet_header(PacketType::Resend, id)});
      break;
    }
    case DatagramClass::Truncated: {
      auto b = bytes_of(control_packet(control_id(next_id), n_tx()));
      size_t n = b.size() > 1 ? 1 + below(static_cast<uint32_t>(b.size() - 1)) : 1;
      if (below(2) && n % 4 == 0) n -= 1 + below(3);  // mostly not whole words
      b.resize(std::max<size_t>(n, 1));
      d.bytes = std::move(b);
      break;
    }
    case DatagramClass::StrayBytes: {
      auto b = bytes_of(control_packet(control_id(next_id), n_tx()));
      for (uint32_t i = 0, n = 1 + below(3); i < n; ++i) b.push_back(static_cast<uint8_t>(u32()));
      d.bytes = std::move(b);
      break;
    }
    case DatagramClass::BadVersion: {
      uint32_t h = any_header();
      uint32_t v;
      do v = below(16);
      while (v == ipbus::kProtocolVersion);
      auto p = control_packet(0, below(3));
      p[0] = (h & 0x0FFFFFFFu) | v << 28;
      d.bytes = bytes_of(p);
      break;
    }
    case DatagramClass::BadReserved: {
      auto p = control_packet(0, below(3));
      p[0] = any_header() | (1 + below(15)) << 24;
      d.bytes = bytes_of(p);
      break;
    }
    case DatagramClass::BadQualifier: {
      auto p = control_packet(0, below(3));
      p[0] = (any_header() & ~0xF0u) | below(15) << 4;
      d.bytes = bytes_of(p);
      break;
    }
    case DatagramClass::BadPacketType: {
      auto p = control_packet(0, below(3));
      p[0] = (any_header() & ~0xFu) | (3 + below(13));
      d.bytes = bytes_of(p);
      break;
    }
    case DatagramClass::BadStatusLength: {
      uint32_t n;
      do n = 1 + below(24);
      while (n == ipbus::kStatusWords);
      std::vector<uint32_t> w(n, 0);
      w[0] = packet_header(PacketType::Status, 0);
      d.bytes = bytes_of(w);
      break;
    }
    case DatagramClass::BadResendLength: {
      std::vector<uint32_t> w{packet_header(PacketType::Resend, sent_ids_.empty() ? 1 : sent_ids_.back())};
      for (uint32_t i = 0, n = 1 + below(3); i < n; ++i) w.push_back(u32());
      d.bytes = bytes_of(w);
      break;
    }
    case DatagramClass::BadTxHeader: {
      uint32_t h = tx_header(static_cast<TxType>(below(6)), below(256), static_cast<uint16_t>(u32()));
      if (below(2)) {
        uint32_t v;
        do v = below(16);
        while (v == ipbus::kProtocolVersion);
        h = (h & 0x0FFFFFFFu) | v << 28;
      } else {
        h = (h & ~0xF0u) | (6 + below(10)) << 4;
      }
      std::vector<uint32_t> bad{h};
      for (uint32_t i = 0, n = below(4); i < n; ++i) bad.push_back(u32());
      d.bytes = bytes_of(with_bad_last(bad));
      break;
    }
    case DatagramClass::BadInfoCode: {
      auto t = random_transaction();
      t[0] = (t[0] & ~0xFu) | below(15);
      d.bytes = bytes_of(with_bad_last(t));
      break;
    }
    case DatagramClass::RmwWords: {
      const auto type = below(2) ? TxType::RmwBits : TxType::RmwSum;
      const uint32_t words = below(4) == 0 ? 0 : 2 + below(254);
      std::vector<uint32_t> t{tx_header(type, words, static_cast<uint16_t>(u32())), interesting_address(1, false), u32()};
      if (type == TxType::RmwBits) t.push_back(u32());
      d.bytes = bytes_of(with_bad_last(t));
      break;
    }
    case DatagramClass::BodyPastEnd: {
      std::vector<uint32_t> t;
      do t = random_transaction();
      while (t.size() < 2);
      t.resize(below(static_cast<uint32_t>(t.size())));  // keep the header and part of the body, or only... the header
      if (t.empty()) t.push_back(tx_header(TxType::Read, 1 + below(255)));
      d.bytes = bytes_of(with_bad_last(t));
      break;
    }
    case DatagramClass::ReplyPastMtu: {
      auto p = control_packet(control_id(next_id), below(2));
      // Reads whose replies together pass 368 words; a few request words each. Mostly in the RAM,
      // where they succeed until the MTU stops them.
      while (p.size() < 40) {
        const auto type = below(2) ? TxType::Read : TxType::NonIncRead;
        const uint32_t words = 150 + below(106);
        p.push_back(tx_header(type, words, static_cast<uint16_t>(u32())));
        p.push_back(below(8) ? kRamBase + below(kRamWords - words) : interesting_address(words, type == TxType::Read));
        if (below(3) == 0) break;
      }
      d.bytes = bytes_of(p);
      break;
    }
    case DatagramClass::Oversized: {
      auto p = control_packet(control_id(next_id), 1);
      while (p.size() * 4 <= 1600) {
        auto t = random_transaction();
        p.insert(p.end(), t.begin(), t.end());
      }
      auto b = bytes_of(p);
      b.resize(ipbus::kMtuBytes + 1 + below(1600 - ipbus::kMtuBytes));
      d.bytes = std::move(b);
      break;
    }
    case DatagramClass::RandomBytes: {
      const uint32_t n = 1 + below(below(4) == 0 ? 1600 : 64);
      std::vector<uint8_t> b(n);
      for (auto& x : b) x = static_cast<uint8_t>(u32());
      if (below(3) == 0 && n >= 4) {  // behind a valid header, to get past the first checks
        auto h = bytes_of({packet_header(static_cast<PacketType>(below(3)), below(2) ? next_id : 0)});
        std::copy(h.begin(), h.end(), b.begin());
      }
      d.bytes = std::move(b);
      break;
    }
    case DatagramClass::kCount: throw std::invalid_argument("DatagramGenerator::make: kCount is no class");
  }
  return d;
}

// ---------------------------------------------------------------------------------------------
// The comparison

std::string describe(const Mismatch& m, size_t max_bus_lines) {
  auto answer = [](const Answer& a) {
    std::string s = fmt::format("    {}{}\n", describe_kind(a.kind, a.fault), a.cycles ? fmt::format(", {} cycles", a.cycles) : "");
    s += a.reply ? fmt::format("    reply ({} bytes): {}\n", a.reply->size(), hex(*a.reply)) : "    no reply\n";
    if (!a.failure.empty()) s += "    FAILURE: " + a.failure + "\n";
    return s;
  };
  size_t first_diff = 0;
  while (first_diff < m.expected_bus.size() && first_diff < m.actual_bus.size() && m.expected_bus[first_diff] == m.actual_bus[first_diff])
    ++first_diff;
  auto bus = [&](const std::vector<BusAccess>& log) {
    std::string s;
    const size_t from = first_diff > max_bus_lines / 2 ? first_diff - max_bus_lines / 2 : 0;
    if (from) s += fmt::format("    ... {} equal accesses\n", from);
    for (size_t i = from; i < log.size() && i < from + max_bus_lines; ++i)
      s += fmt::format("    {}{:4} {}\n", i == first_diff ? ">" : " ", i, to_string(log[i]));
    if (log.size() > from + max_bus_lines) s += fmt::format("    ... {} more\n", log.size() - from - max_bus_lines);
    if (log.empty()) s += "    (none)\n";
    return s;
  };
  std::string s = fmt::format("MISMATCH: {}\n  datagram ({} bytes): {}\n", m.what, m.datagram.size(), hex(m.datagram));
  s += "  expected (C++ target):\n" + answer(m.expected);
  s += "  actual (device):\n" + answer(m.actual);
  s += fmt::format("  bus, expected ({} accesses):\n", m.expected_bus.size()) + bus(m.expected_bus);
  s += fmt::format("  bus, actual ({} accesses):\n", m.actual_bus.size()) + bus(m.actual_bus);
  return s;
}

DiffRunner::DiffRunner(std::unique_ptr<Side> reference, std::unique_ptr<Side> device, const std::set<uint32_t>& refused)
    : reference_(std::move(reference)), device_(std::move(device)) {
  reference_->board().refused = refused;
  device_->board().refused = refused;
  std::string diff = device_->board().compare_contents(reference_->board());
  if (!diff.empty()) throw std::invalid_argument("DiffRunner: the two boards start different: " + diff);
}

uint16_t DiffRunner::next_expected_id() const {
  if (auto* cpp = dynamic_cast<const CppSide*>(reference_.get())) return cpp->target().next_expected_id();
  return 1;
}

std::optional<Mismatch> DiffRunner::run_one(const uint8_t* data, size_t size) {
  if (size == 0) {
    ++stats_.skipped_empty;
    return std::nullopt;
  }
  return run(std::vector<uint8_t>(data, data + size));
}

std::optional<Mismatch> DiffRunner::run(const std::vector<uint8_t>& datagram) {
  using clock = std::chrono::steady_clock;
  reference_->board().log.clear();
  device_->board().log.clear();
  const auto t0 = clock::now();
  Answer expected = reference_->handle(datagram);
  const auto t1 = clock::now();
  Answer actual = device_->handle(datagram);
  const auto t2 = clock::now();
  ++stats_.datagrams;
  stats_.reference_seconds += std::chrono::duration<double>(t1 - t0).count();
  stats_.device_seconds += std::chrono::duration<double>(t2 - t1).count();
  stats_.device_cycles += actual.cycles;
  if (expected.kind < stats_.kinds.size()) ++stats_.kinds[expected.kind];
  if (expected.fault < stats_.faults.size()) ++stats_.faults[expected.fault];
  last_reference_ = expected;
  last_device_ = actual;

  const auto& eb = reference_->board().log;
  const auto& ab = device_->board().log;
  auto writes = [](const std::vector<BusAccess>& log) {
    std::vector<BusAccess> w;
    for (const auto& a : log)
      if (a.write) w.push_back(a);
    return w;
  };
  std::string what;
  if (!actual.failure.empty()) what = fmt::format("{}: {}", device_->name(), actual.failure);
  else if (!expected.failure.empty()) what = fmt::format("{}: {}", reference_->name(), expected.failure);
  else if (expected.reply.has_value() != actual.reply.has_value())
    what = expected.reply ? "the device sent no reply" : "the device replied to a datagram the C++ target drops";
  else if (expected.reply && *expected.reply != *actual.reply) {
    const auto& e = *expected.reply;
    const auto& a = *actual.reply;
    size_t i = 0;
    while (i < e.size() && i < a.size() && e[i] == a[i]) ++i;
    what = fmt::format("replies differ from byte {} (word {}); {} vs {} bytes", i, i / 4, e.size(), a.size());
  } else if (expected.kind != actual.kind || expected.fault != actual.fault)
    what = fmt::format("stat differs: expected {}, got {}", describe_kind(expected.kind, expected.fault), describe_kind(actual.kind, actual.fault));
  else if (auto ew = writes(eb), aw = writes(ab); ew != aw) {
    size_t i = 0;
    while (i < ew.size() && i < aw.size() && ew[i] == aw[i]) ++i;
    what = fmt::format("bus writes differ from write {} ({} vs {} writes)", i, ew.size(), aw.size());
  } else if (eb != ab) {
    size_t i = 0;
    while (i < eb.size() && i < ab.size() && eb[i] == ab[i]) ++i;
    what = fmt::format("bus reads differ from access {} ({} vs {} accesses)", i, eb.size(), ab.size());
  } else if (auto d = device_->board().compare_contents(reference_->board()); !d.empty())
    what = "register contents differ: " + d;
  if (what.empty()) return std::nullopt;

  ++stats_.mismatches;
  Mismatch m{what, datagram, std::move(expected), std::move(actual), eb, ab};
  reset_targets();
  device_->board().copy_contents_from(reference_->board());
  return m;
}

void DiffRunner::reset_targets() {
  reference_->reset();
  device_->reset();
}

std::set<uint32_t> random_refused_words(uint64_t seed, size_t n_ram, size_t n_controller, size_t n_emulator) {
  std::mt19937_64 rng(seed);
  std::set<uint32_t> s;
  for (size_t i = 0; i < n_ram; ++i) s.insert(kRamBase + static_cast<uint32_t>(rng() % kRamWords));
  auto registers = [&](auto& regs, uint32_t base, size_t n) {
    for (size_t tries = 0, got = 0; got < n && tries < 1000; ++tries) {
      uint32_t w = random_word_of(regs, rng, base);
      if (BoardRegisters::readable(w) && BoardRegisters::writable(w) && s.insert(w).second) ++got;
    }
  };
  registers(mxtb::ocs::kRegisters, 0, n_controller);
  registers(mxtb::emu::kRegisters, kEmulatorBase, n_emulator);
  return s;
}

namespace {

// The datagram with its control packet header's id replaced (a fresh target expects 1, and takes
// 0 always); unchanged when it does not start with a control header.
std::vector<uint8_t> with_packet_id(std::vector<uint8_t> d, uint16_t id) {
  auto w = ipbus::to_words(d.data(), std::min<size_t>(d.size() / 4 * 4, 4), nullptr);
  if (!w) return d;
  auto h = ipbus::decode_packet_header(w->words[0], nullptr);
  if (!h || h->type != ipbus::PacketType::Control) return d;
  auto head = ipbus::to_bytes({ipbus::encode(ipbus::PacketHeader{ipbus::PacketType::Control, id})}, w->order);
  std::copy(head.begin(), head.end(), d.begin());
  return d;
}

}  // namespace

std::vector<uint8_t> minimise(const std::vector<uint8_t>& datagram, const std::function<std::unique_ptr<DiffRunner>(uint64_t)>& make_runner,
                              uint64_t attempts) {
  // A candidate fails when it mismatches on any of `attempts` fresh pairs (the device's timing
  // differs between them: some faults need a particular response or stall).
  auto fails = [&](const std::vector<uint8_t>& d) {
    if (d.empty()) return false;
    for (uint64_t a = 0; a < attempts; ++a)
      if (make_runner(a)->run(d)) return true;
    return false;
  };
  std::vector<uint8_t> best = datagram;
  if (!fails(best)) {
    best = with_packet_id(datagram, 0);
    if (!fails(best)) return datagram;
  }
  // Whole transactions of a control packet first, from the end (later transactions depend on
  // earlier ones less than the reverse).
  for (bool progress = true; progress;) {
    progress = false;
    auto w = ipbus::to_words(best.data(), best.size(), nullptr);
    if (!w) break;
    std::vector<size_t> starts;  // word index of each whole transaction
    for (size_t pos = 1; pos < w->words.size();) {
      auto th = ipbus::decode_tx_header(w->words[pos]);
      if (!th) break;
      const size_t len = 1 + ipbus::request_body_words(th->type, th->words);
      if (pos + len > w->words.size()) break;
      starts.push_back(pos);
      pos += len;
    }
    for (size_t i = starts.size(); i-- > 0;) {
      const size_t end = i + 1 < starts.size() ? starts[i + 1] : w->words.size();
      std::vector<uint8_t> t = best;
      t.erase(t.begin() + static_cast<long>(starts[i] * 4), t.begin() + static_cast<long>(std::min(t.size(), end * 4)));
      if (fails(t)) {
        best = std::move(t);
        progress = true;
        break;  // the boundaries moved
      }
    }
  }
  // Then whole words after the header, from the end, until nothing more goes.
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t w = best.size() / 4; w-- > 1;) {
      std::vector<uint8_t> t = best;
      t.erase(t.begin() + static_cast<long>(w * 4), t.begin() + static_cast<long>(std::min(t.size(), w * 4 + 4)));
      if (fails(t)) {
        best = std::move(t);
        progress = true;
      }
    }
  }
  while (best.size() > 1) {
    std::vector<uint8_t> t(best.begin(), best.end() - 1);
    if (!fails(t)) break;
    best = std::move(t);
  }
  return best;
}

}  // namespace mxtb::testbench::ipbus_diff
