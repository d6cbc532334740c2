#include "sim/ipbus_rtl_endpoint.h"

#include "protocol/ipbus/codec.h"
#include "sim/rtl_assert.h"

#include "Vipbus_transactor.h"
#include "verilated.h"

#include <fmt/format.h>

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

struct IpbusRtlEndpoint::Impl {
  std::unique_ptr<VerilatedContext> ctx;
  std::unique_ptr<Vipbus_transactor> top;
  uint64_t cycle = 0;
  uint64_t unpaid = 0, prepaid = 0;

  // The interconnect's slave side: one access outstanding; the next one's request is taken in
  // the cycle a response is, as the board's block RAM and decoder take it (a streamed block).
  bool aw_taken = false, w_taken = false, b_pending = false, r_pending = false;
  uint32_t aw_addr = 0, w_data = 0, r_data = 0;
  uint64_t delay = 0;
  bool resp_error = false;

  Impl() {
    VerilatedContext* saved = Verilated::threadContextp();
    ctx = std::make_unique<VerilatedContext>();
    catch_assertions(*ctx);
    {
      ContextScope scope(ctx.get());
      top = std::make_unique<Vipbus_transactor>(ctx.get(), "ipbus_transactor");
      top->s_axis_tvalid = 0;
      top->m_axis_tready = 1;
      drive_slave();
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

  void drive_slave() {
    const bool b_now = b_pending && delay == 0, r_now = r_pending && delay == 0;
    // The transactor's ready for a response is its state's (no input reaches it in the cycle).
    const bool write_ends = b_now && top->m_axil_bready, read_ends = r_now && top->m_axil_rready;
    const bool read_free = !r_pending || read_ends;
    top->m_axil_awready = (!aw_taken || write_ends) && read_free;
    top->m_axil_wready = (!w_taken || write_ends) && read_free;
    top->m_axil_arready = ((!aw_taken && !w_taken) || write_ends) && read_free;
    top->m_axil_bvalid = b_now;
    top->m_axil_rvalid = r_now;
    top->m_axil_bresp = top->m_axil_rresp = resp_error ? 2 : 0;  // SLVERR
    top->m_axil_rdata = r_data;
  }

  void finish_access(const BusResult& r) {
    if (r.synced) {
      unpaid = 0;
      prepaid += r.cycles;
    }
    delay = r.cycles ? r.cycles - 1 : 0;
    resp_error = !r.ok;
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
      drive_slave();
      top->clk_i = 0;
      top->eval();
      const bool in_fire = top->s_axis_tvalid && top->s_axis_tready;
      const bool out_fire = top->m_axis_tvalid;
      const uint32_t out_data = top->m_axis_tdata;
      const bool out_last = top->m_axis_tlast;
      const bool aw_fire = top->m_axil_awvalid && top->m_axil_awready;
      const bool w_fire = top->m_axil_wvalid && top->m_axil_wready;
      const bool ar_fire = top->m_axil_arvalid && top->m_axil_arready;
      const bool b_fire = top->m_axil_bvalid && top->m_axil_bready;
      const bool r_fire = top->m_axil_rvalid && top->m_axil_rready;
      const uint32_t awaddr = top->m_axil_awaddr, wdata = top->m_axil_wdata, araddr = top->m_axil_araddr;
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
      if (b_fire) b_pending = aw_taken = w_taken = false;
      if (r_fire) r_pending = false;
      if (delay && (b_pending || r_pending)) --delay;
      if (ar_fire) {
        const BusResult r = bus.access(false, araddr / 4, 0, unpaid);
        finish_access(r);
        r_pending = true;
        r_data = r.ok ? r.data : 0;
      }
      if (aw_fire) {
        aw_taken = true;
        aw_addr = awaddr;
      }
      if (w_fire) {
        w_taken = true;
        w_data = wdata;
      }
      if (aw_taken && w_taken && !b_pending) {
        finish_access(bus.access(true, aw_addr / 4, w_data, unpaid));
        b_pending = true;
      }
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

}  // namespace mxtb::sim
