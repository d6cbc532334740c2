#include "sim/ipbus_rtl_endpoint.h"

#include "protocol/board_map.h"
#include "protocol/ipbus/codec.h"
#include "sim/rtl_assert.h"

#include "Vboard_bus.h"
#include "verilated.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace mxtb::sim {

namespace ipbus = protocol::ipbus;

namespace {

// Verilator reports a failed assertion to the thread's current context. The emulator's other
// models (the server's engine) have their own, current on this thread; ours is current only while
// the transactor evaluates, so that neither counts the other's errors.
class ContextScope {
 public:
  explicit ContextScope(VerilatedContext* ours) : saved_(Verilated::threadContextp()) { Verilated::threadContextp(ours); }
  ~ContextScope() { Verilated::threadContextp(saved_); }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  VerilatedContext* saved_;
};

}  // namespace

// One of board_bus's AXI4-Lite master ports, and the slave this class plays behind it: one access
// outstanding; the next one's request is taken in the cycle a response is, as the board's block
// RAM takes it (a streamed block). `base` maps the port's byte addresses to IPbus word addresses.
struct SlavePort {
  CData &awvalid, &awready, &wvalid, &wready, &bvalid, &bready, &arvalid, &arready, &rvalid, &rready, &bresp, &rresp;
  IData &awaddr, &wdata, &araddr, &rdata;
  uint32_t base;
  bool aw_taken = false, w_taken = false, b_pending = false, r_pending = false;
  uint32_t aw_addr = 0, w_data = 0, r_data = 0;
  uint64_t delay = 0;
  bool resp_error = false;

  // Before the edge. The master's ready for a response is its state's (no input reaches it in
  // the cycle), so a response taken now frees the slave for the next request in the same cycle.
  void drive() {
    const bool b_now = b_pending && delay == 0, r_now = r_pending && delay == 0;
    const bool write_ends = b_now && bready, read_ends = r_now && rready;
    const bool read_free = !r_pending || read_ends;
    awready = (!aw_taken || write_ends) && read_free;
    wready = (!w_taken || write_ends) && read_free;
    arready = ((!aw_taken && !w_taken) || write_ends) && read_free;
    bvalid = b_now;
    rvalid = r_now;
    bresp = rresp = resp_error ? 2 : 0;  // SLVERR
    rdata = r_data;
  }
  struct Seen {
    bool aw, w, ar, b, r;
    uint32_t awaddr, wdata, araddr;
  };
  Seen sample() const {
    return {awvalid && awready, wvalid && wready, arvalid && arready, bvalid && bready, rvalid && rready, awaddr, wdata, araddr};
  }
};

struct IpbusRtlEndpoint::Impl {
  std::unique_ptr<VerilatedContext> ctx;
  std::unique_ptr<Vboard_bus> top;
  uint64_t cycle = 0;
  uint64_t unpaid = 0, prepaid = 0;
  std::unique_ptr<SlavePort> ctrl, emu;

  Impl() {
    VerilatedContext* saved = Verilated::threadContextp();
    ctx = std::make_unique<VerilatedContext>();
    catch_assertions(*ctx);
    {
      ContextScope scope(ctx.get());
      top = std::make_unique<Vboard_bus>(ctx.get(), "board_bus");
      Vboard_bus& t = *top;
      ctrl.reset(new SlavePort{t.m_ctrl_awvalid, t.m_ctrl_awready, t.m_ctrl_wvalid, t.m_ctrl_wready, t.m_ctrl_bvalid,
                               t.m_ctrl_bready, t.m_ctrl_arvalid, t.m_ctrl_arready, t.m_ctrl_rvalid, t.m_ctrl_rready,
                               t.m_ctrl_bresp, t.m_ctrl_rresp, t.m_ctrl_awaddr, t.m_ctrl_wdata, t.m_ctrl_araddr,
                               t.m_ctrl_rdata, protocol::kControllerBase});
      emu.reset(new SlavePort{t.m_emu_awvalid, t.m_emu_awready, t.m_emu_wvalid, t.m_emu_wready, t.m_emu_bvalid,
                              t.m_emu_bready, t.m_emu_arvalid, t.m_emu_arready, t.m_emu_rvalid, t.m_emu_rready,
                              t.m_emu_bresp, t.m_emu_rresp, t.m_emu_awaddr, t.m_emu_wdata, t.m_emu_araddr,
                              t.m_emu_rdata, protocol::kEmulatorBase});
      top->s_axis_tvalid = 0;
      top->m_axis_tready = 1;
      ctrl->drive();
      emu->drive();
      top->rst_ni = 0;
      for (int i = 0; i < 4; ++i) clock();
      top->rst_ni = 1;
      clock();
    }
    Verilated::threadContextp(saved);  // constructing a context made it the thread's
    unpaid = prepaid = 0;              // reset happens before the board answers: not charged
  }
  ~Impl() {
    ContextScope scope(ctx.get());
    top.reset();  // the model before its context
  }

  void clock() {
    top->clk_i = 0;
    top->eval();
    top->clk_i = 1;
    top->eval();
    ++cycle;
    if (prepaid) --prepaid;
    else ++unpaid;
    check_assertions(*ctx, cycle);
  }

  // Hands one access to the Bus, in the cycle its request was taken here. On the board the
  // slave takes the request in that very cycle, so when that cycle is still unpaid it is the
  // first of the access's own cycles, not one before them: the access then ends `cycles` - 1
  // cycles after this edge, as it would in the top (rtl_board's "the emulator's join" test). A
  // request taken in a cycle already paid (the response cycle of the access before, which the
  // slave's own cycles covered) starts its access with the next one.
  BusResult hand_to_bus(SlavePort& p, Bus& bus, bool write, uint32_t byte_addr, uint32_t data) {
    const uint64_t overlap = unpaid ? 1 : 0;
    const BusResult r = bus.access(write, p.base + byte_addr / 4, data, unpaid - overlap);
    const uint64_t shared = r.synced ? std::min<uint64_t>(overlap, r.cycles) : 0;  // an unsynced access paid nothing
    if (r.synced) {
      unpaid = 0;
      prepaid += r.cycles - shared;
    }
    p.delay = r.cycles > shared ? r.cycles - shared - 1 : 0;
    p.resp_error = !r.ok;
    return r;
  }

  // A port's state after the edge: its accesses handed to the Bus as they complete.
  void serve(SlavePort& p, const SlavePort::Seen& s, Bus& bus) {
    if (s.b) p.b_pending = p.aw_taken = p.w_taken = false;
    if (s.r) p.r_pending = false;
    if (p.delay && (p.b_pending || p.r_pending)) --p.delay;
    if (s.ar) {
      const BusResult r = hand_to_bus(p, bus, false, s.araddr, 0);
      p.r_pending = true;
      p.r_data = r.ok ? r.data : 0;
    }
    if (s.aw) {
      p.aw_taken = true;
      p.aw_addr = s.awaddr;
    }
    if (s.w) {
      p.w_taken = true;
      p.w_data = s.wdata;
    }
    if (p.aw_taken && p.w_taken && !p.b_pending) {
      hand_to_bus(p, bus, true, p.aw_addr, p.w_data);
      p.b_pending = true;
    }
  }

  Outcome handle(const std::vector<uint8_t>& d, Bus& bus, uint64_t bound) {
    ContextScope scope(ctx.get());
    Outcome out;
    const size_t n_beats = (d.size() + 3) / 4;
    size_t beat = 0;
    std::vector<uint8_t> reply;
    bool reply_done = false, stat_seen = false;
    const uint64_t start = cycle;
    for (;;) {
      uint32_t data = 0;
      const size_t at = beat * 4, n = beat < n_beats ? std::min<size_t>(4, d.size() - at) : 0;
      for (size_t i = 0; i < n; ++i) data |= uint32_t{d[at + i]} << (24 - 8 * i);
      top->s_axis_tvalid = beat < n_beats;
      top->s_axis_tdata = data;
      top->s_axis_tlast = beat + 1 == n_beats;
      top->s_axis_tkeep = beat + 1 == n_beats ? static_cast<uint8_t>((0xF0u >> n) & 0xF) : 0xF;
      top->m_axis_tready = 1;
      ctrl->drive();
      emu->drive();
      top->clk_i = 0;
      top->eval();
      const bool in_fire = top->s_axis_tvalid && top->s_axis_tready;
      const bool out_fire = top->m_axis_tvalid;
      const uint32_t out_data = top->m_axis_tdata;
      const bool out_last = top->m_axis_tlast;
      const SlavePort::Seen ctrl_seen = ctrl->sample(), emu_seen = emu->sample();
      const bool stat = top->stat_valid_o;
      const uint8_t kind = top->stat_kind_o, fault = top->stat_fault_o;
      clock();

      if (in_fire) ++beat;
      if (out_fire) {
        for (int s = 24; s >= 0; s -= 8) reply.push_back(static_cast<uint8_t>(out_data >> s));
        reply_done = out_last;
      }
      if (stat) {
        stat_seen = true;
        out.kind = kind;
        out.fault = fault;
      }
      serve(*ctrl, ctrl_seen, bus);
      serve(*emu, emu_seen, bus);
      if (beat == n_beats && stat_seen && (reply_done || out.kind == 3)) break;
      if (cycle - start > bound)
        throw std::runtime_error(fmt::format("the IPbus transactor hung: {} cycles on one datagram of {} bytes ({} of {} beats "
                                             "taken, {}, {} reply bytes)",
                                             cycle - start, d.size(), beat, n_beats, stat_seen ? "decided" : "not decided",
                                             reply.size()));
    }
    if (!reply.empty()) out.reply = std::move(reply);
    out.cycles = cycle - start;
    out.unpaid_cycles = unpaid;
    unpaid = 0;
    return out;
  }
};

IpbusRtlEndpoint::IpbusRtlEndpoint() : impl_(std::make_unique<Impl>()) {}
IpbusRtlEndpoint::~IpbusRtlEndpoint() = default;

IpbusRtlEndpoint::Outcome IpbusRtlEndpoint::handle(const std::vector<uint8_t>& datagram, Bus& bus, uint64_t cycle_bound) {
  if (datagram.empty() || datagram.size() > 65535)
    throw std::invalid_argument(fmt::format("IpbusRtlEndpoint::handle: a datagram of {} bytes (want 1..65535)", datagram.size()));
  return impl_->handle(datagram, bus, cycle_bound);
}

uint64_t IpbusRtlEndpoint::cycle() const { return impl_->cycle; }

uint32_t executed_transactions(const std::vector<uint8_t>& reply) {
  auto words = ipbus::to_words(reply.data(), reply.size(), nullptr);
  if (!words || words->words.empty()) return 0;
  const auto& w = words->words;
  auto header = ipbus::decode_packet_header(w[0], nullptr);
  if (!header || header->type != ipbus::PacketType::Control) return 0;
  uint32_t n = 0;
  for (size_t pos = 1; pos < w.size();) {
    auto th = ipbus::decode_tx_header(w[pos]);
    if (!th || th->info == ipbus::InfoCode::BadHeader) break;  // refused before the bus
    ++n;
    if (th->info != ipbus::InfoCode::Success) break;  // a bus error ends the packet
    pos += 1 + ipbus::reply_body_words(th->type, th->words);
  }
  return n;
}

bool addresses_only_emulator_block(const std::vector<uint8_t>& request) {
  auto words = ipbus::to_words(request.data(), request.size(), nullptr);
  if (!words) return false;
  auto header = ipbus::decode_packet_header(words->words[0], nullptr);
  return header && header->type == ipbus::PacketType::Control &&
         ipbus::transactions_within(words->words, protocol::kEmulatorBase, protocol::kEmulatorWords);
}

}  // namespace mxtb::sim
