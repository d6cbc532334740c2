// The board top (rtl/board/mxtb_board.sv) on its own, as a board's UDP core would drive it: IPbus
// datagrams in on AXI4-Stream, replies out, the emulator's port answered here. The transactor, the
// decoder, the controller and the block RAM are all RTL; their assertions are on, and one that
// fails fails the test. Shrunk: 8 ports, 20 elements, 4 links, 256 RAM words, 4 reply buffers.
#include "protocol/board_map.h"
#include "protocol/ipbus/codec.h"

#include "Vmxtb_board_small.h"
#include "verilated.h"

#include <doctest/doctest.h>
#include <mxtb/emu_regs.h>
#include <mxtb/ocs_regs.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

namespace ipbus = mxtb::protocol::ipbus;
using ipbus::InfoCode;
using ipbus::TxType;

namespace {

constexpr uint32_t kEmuBase = 0x10000, kRamBase = 0x20000, kRamWords = 256;

struct Board {
  VerilatedContext ctx;
  std::unique_ptr<Vmxtb_board_small> top;
  std::map<uint32_t, uint32_t> emu;  // the emulator's block, by byte offset
  struct EmuAccess {
    bool write;
    uint32_t offset, data;
  };
  std::vector<EmuAccess> emu_log;
  bool emu_b = false, emu_r = false;
  uint32_t emu_rdata = 0;
  // The emulator's block as it can also be: answering `emu_latency` cycles late (RUN_UNTIL runs
  // simulated time first) and refusing the offsets in emu_refuse (SLVERR, nothing written).
  uint32_t emu_latency = 0;
  std::set<uint32_t> emu_refuse;
  uint32_t emu_b_wait = 0, emu_r_wait = 0;
  uint8_t emu_bresp = 0, emu_rresp = 0;
  // Or taking an address only after it was offered for `emu_accept_delay` cycles and write data
  // after `emu_w_accept_delay`, independently (AXI4-Lite lets either come first), the data into a
  // 2-word buffer: a slave that would take a W the top offers with no write behind it.
  uint32_t emu_accept_delay = 0, emu_w_accept_delay = 0;
  uint32_t emu_aw_offered = 0, emu_w_offered = 0, emu_ar_offered = 0;
  std::deque<uint32_t> emu_aw_taken, emu_w_taken;
  uint64_t cycle = 0;

  // The firmware processor on the s_fw_* port: its accesses one at a time, in order, each
  // offered until taken (AXI4-Lite), its results with the cycle each response came.
  struct FwAccess {
    bool write;
    uint32_t byte_addr, data;
    uint32_t result = 0;
    uint8_t resp = 0;
    uint64_t done_cycle = 0;
  };
  std::vector<FwAccess> fw;
  size_t fw_next = 0;  // the access on offer or awaiting its response
  bool fw_aw_taken = false, fw_w_taken = false, fw_a_taken = false;
  uint64_t fw_ready_from = 0;  // the firmware takes no response before this cycle

  Board() {
    ctx.fatalOnError(false);
    top = std::make_unique<Vmxtb_board_small>(&ctx, "board");
    top->s_axis_tvalid = 0;
    top->m_axis_tready = 1;
    top->rst_ni = 0;
    for (int i = 0; i < 4; ++i) clock();
    top->rst_ni = 1;
    clock();
  }

  // The emulator's block answers the cycle after a request (emu_latency later), as the emulator's
  // bus would, and takes the next request in the cycle its response is taken (the top's ready is
  // its state's). Its ready does not wait for valid, as the emulator's does not: the top's valid
  // may follow the inputs set here, after this is computed. With no accept delays a write's
  // address and data, which the transactor offers together, are taken and paired in one cycle.
  void drive_emu() {
    const bool b_up = emu_b && emu_b_wait == 0, r_up = emu_r && emu_r_wait == 0;
    const bool b_free = !emu_b || (b_up && top->m_emu_bready), r_free = !emu_r || (r_up && top->m_emu_rready);
    top->m_emu_awready = b_free && emu_aw_taken.empty() && emu_aw_offered >= emu_accept_delay;
    top->m_emu_wready = b_free && emu_w_taken.size() < 2 && emu_w_offered >= emu_w_accept_delay;
    top->m_emu_arready = r_free && emu_ar_offered >= emu_accept_delay;
    top->m_emu_bvalid = b_up;
    top->m_emu_bresp = emu_bresp;
    top->m_emu_rvalid = r_up;
    top->m_emu_rresp = emu_rresp;
    top->m_emu_rdata = emu_rdata;
  }

  void drive_fw() {
    const bool on = fw_next < fw.size();
    const FwAccess* a = on ? &fw[fw_next] : nullptr;
    top->s_fw_arvalid = on && !a->write && !fw_a_taken;
    top->s_fw_araddr = on ? a->byte_addr : 0;
    top->s_fw_awvalid = on && a->write && !fw_aw_taken;
    top->s_fw_awaddr = on ? a->byte_addr : 0;
    top->s_fw_wvalid = on && a->write && !fw_w_taken;
    top->s_fw_wdata = on ? a->data : 0;
    top->s_fw_wstrb = 0xF;
    top->s_fw_rready = cycle >= fw_ready_from;
    top->s_fw_bready = cycle >= fw_ready_from;
  }

  // What one clock edge took and gave on the streams.
  struct Edge {
    bool in = false, out = false, last = false, stat = false;
    uint32_t data = 0;
    uint8_t kind = 3;
  };

  // One clock with the stream inputs as set; the emulator's port served on the way.
  Edge clock() {
    top->clk_i = 0;
    drive_emu();
    drive_fw();
    top->eval();
    const bool fw_ar = top->s_fw_arvalid && top->s_fw_arready, fw_aw = top->s_fw_awvalid && top->s_fw_awready;
    const bool fw_w = top->s_fw_wvalid && top->s_fw_wready;
    const bool fw_r = top->s_fw_rvalid && top->s_fw_rready, fw_b = top->s_fw_bvalid && top->s_fw_bready;
    const uint32_t fw_rdata = top->s_fw_rdata;
    const uint8_t fw_resp = fw_r ? top->s_fw_rresp : top->s_fw_bresp;
    Edge e;
    e.in = top->s_axis_tvalid && top->s_axis_tready;
    e.out = top->m_axis_tvalid && top->m_axis_tready;
    e.data = top->m_axis_tdata;
    e.last = top->m_axis_tlast;
    e.stat = top->stat_valid_o;
    e.kind = top->stat_kind_o;
    const bool aw = top->m_emu_awvalid && top->m_emu_awready, ar = top->m_emu_arvalid && top->m_emu_arready;
    const bool w = top->m_emu_wvalid && top->m_emu_wready;
    const bool aw_offered = top->m_emu_awvalid, w_offered = top->m_emu_wvalid, ar_offered = top->m_emu_arvalid;
    const bool b = top->m_emu_bvalid && top->m_emu_bready, r = top->m_emu_rvalid && top->m_emu_rready;
    const uint32_t awaddr = top->m_emu_awaddr, wdata = top->m_emu_wdata, araddr = top->m_emu_araddr;
    top->clk_i = 1;
    top->eval();
    ++cycle;
    REQUIRE_FALSE(ctx.gotError());  // an RTL assertion failed: Verilator's %Error line names it
    if (fw_ar) fw_a_taken = true;
    if (fw_aw) fw_aw_taken = true;
    if (fw_w) fw_w_taken = true;
    if (fw_r || fw_b) {
      REQUIRE(fw_next < fw.size());
      fw[fw_next].result = fw_rdata;
      fw[fw_next].resp = fw_resp;
      fw[fw_next].done_cycle = cycle;
      ++fw_next;
      fw_a_taken = fw_aw_taken = fw_w_taken = false;
    }
    if (b) emu_b = false;
    if (r) emu_r = false;
    if (emu_b_wait) --emu_b_wait;
    if (emu_r_wait) --emu_r_wait;
    emu_aw_offered = aw_offered && !aw ? emu_aw_offered + 1 : 0;
    emu_w_offered = w_offered && !w ? emu_w_offered + 1 : 0;
    emu_ar_offered = ar_offered && !ar ? emu_ar_offered + 1 : 0;
    if (aw) emu_aw_taken.push_back(awaddr);
    if (w) emu_w_taken.push_back(wdata);
    if (!emu_b && !emu_aw_taken.empty() && !emu_w_taken.empty()) {  // a write with its address and data
      const uint32_t offset = emu_aw_taken.front(), data = emu_w_taken.front();
      emu_aw_taken.pop_front();
      emu_w_taken.pop_front();
      const bool refused = emu_refuse.count(offset) > 0;
      if (!refused) emu[offset] = data;
      emu_log.push_back({true, offset, data});
      emu_b = true;
      emu_b_wait = emu_latency;
      emu_bresp = refused ? 2 : 0;
    }
    if (ar) {
      const bool refused = emu_refuse.count(araddr) > 0;
      emu_rdata = refused ? 0xDEADBEEF : emu.count(araddr) ? emu[araddr] : 0;
      emu_log.push_back({false, araddr, 0});
      emu_r = true;
      emu_r_wait = emu_latency;
      emu_rresp = refused ? 2 : 0;
    }
    return e;
  }

  // When the last datagram's beats went in and its reply's words came out, in cycles from its
  // first beat offered.
  struct Timeline {
    std::vector<uint64_t> in, out;
    uint64_t cycles = 0;  // to the reply's last word (or the drop's decision) inclusive
  } timeline;

  // One datagram in (big-endian words), its reply's words out (nullopt: dropped).
  std::optional<std::vector<uint32_t>> send(const std::vector<uint32_t>& words) {
    timeline = {};
    size_t beat = 0;
    std::vector<uint32_t> reply;
    bool done = false, stat = false;
    uint8_t kind = 3;
    for (uint64_t start = cycle; cycle - start < 100000;) {
      top->s_axis_tvalid = beat < words.size();
      top->s_axis_tdata = beat < words.size() ? words[beat] : 0;
      top->s_axis_tkeep = 0xF;
      top->s_axis_tlast = beat + 1 == words.size();
      top->m_axis_tready = 1;
      const Edge e = clock();
      if (e.in) {
        ++beat;
        timeline.in.push_back(cycle - start - 1);
      }
      if (e.out) {
        reply.push_back(e.data);
        done = e.last;
        timeline.out.push_back(cycle - start - 1);
      }
      timeline.cycles = cycle - start;
      if (e.stat) {
        stat = true;
        kind = e.kind;
      }
      if (beat == words.size() && stat && (done || kind == 3)) break;
    }
    top->s_axis_tvalid = 0;
    REQUIRE(stat);
    if (kind == 3) return std::nullopt;
    REQUIRE(done);
    return reply;
  }
};

uint32_t tx(TxType t, uint32_t words, uint16_t id = 0) { return ipbus::encode(ipbus::TxHeader{id, static_cast<uint8_t>(words), t, InfoCode::Request}); }
uint32_t ok(TxType t, uint32_t words, uint16_t id = 0) { return ipbus::encode(ipbus::TxHeader{id, static_cast<uint8_t>(words), t, InfoCode::Success}); }
uint32_t control(uint16_t id = 0) { return ipbus::encode(ipbus::PacketHeader{ipbus::PacketType::Control, id}); }

}  // namespace

TEST_CASE("the host reads the controller's identity through the board's IPbus, as from a board") {
  Board b;
  namespace reg = mxtb::ocs::reg;
  auto r = b.send({control(), tx(TxType::Read, 4, 1), reg::id::kOffset / 4});
  REQUIRE(r.has_value());
  REQUIRE(r->size() == 6);
  CHECK((*r)[0] == control());
  CHECK((*r)[1] == ok(TxType::Read, 4, 1));
  CHECK((*r)[2] == reg::id::kReset);  // "OCS1"
  CHECK((*r)[3] == reg::version::kReset);
  // PARAMS and SIZES say what this controller was built with: the board's 8 ports, 4 links,
  // 12-bit DACs and 20 elements, passed down from the top.
  CHECK(((*r)[4] >> reg::params::kNPortsShift & 0xFF) == 8);
  CHECK(((*r)[4] >> reg::params::kNLinksShift & 0xFF) == 4);
  CHECK((((*r)[4] & reg::params::kDacBitsMask) >> reg::params::kDacBitsShift) == 12);
  CHECK((((*r)[5] & reg::sizes::kNElemsMask) >> reg::sizes::kNElemsShift) == 20);
  CHECK(b.emu_log.empty());
}

TEST_CASE("controller scratch and the block RAM: written, read back; a block past the RAM's end moves nothing") {
  Board b;
  const uint32_t scratch = mxtb::ocs::reg::scratch::kOffset / 4;
  auto w = b.send({control(), tx(TxType::Write, 2, 1), scratch, 0xA1, 0xA2, tx(TxType::Write, 3, 2), kRamBase + 7, 1, 2, 3,
                   tx(TxType::Read, 2, 3), scratch, tx(TxType::Read, 3, 4), kRamBase + 7});
  REQUIRE(w.has_value());
  CHECK(*w == std::vector<uint32_t>{control(), ok(TxType::Write, 2, 1), ok(TxType::Write, 3, 2), ok(TxType::Read, 2, 3), 0xA1, 0xA2,
                                    ok(TxType::Read, 3, 4), 1, 2, 3});
  // 4 words from the RAM's last two: refused whole by the transactor, the RAM unchanged.
  auto past = b.send({control(), tx(TxType::Write, 4, 5), kRamBase + kRamWords - 2, 9, 9, 9, 9});
  REQUIRE(past.has_value());
  CHECK((*past)[1] == ((tx(TxType::Write, 0, 5) & ~0xFu) | static_cast<uint32_t>(InfoCode::WriteError)));
  auto tail = b.send({control(), tx(TxType::Read, 2, 6), kRamBase + kRamWords - 2});
  REQUIRE(tail.has_value());
  CHECK((*tail)[2] != 9);
  CHECK((*tail)[3] != 9);
  // RMW on the RAM: a read and a write of the block RAM.
  auto rmw = b.send({control(), tx(TxType::RmwSum, 1, 7), kRamBase + 8, 40, tx(TxType::Read, 1, 8), kRamBase + 8});
  REQUIRE(rmw.has_value());
  CHECK(*rmw == std::vector<uint32_t>{control(), ok(TxType::RmwSum, 1, 7), 2, ok(TxType::Read, 1, 8), 42});
  // The RAM's first and last words are the RAM's (the window's edges), and none of this reached the
  // emulator's block: the decoder sends the RAM window to the RAM alone.
  auto edges = b.send({control(), tx(TxType::Write, 1, 9), kRamBase, 0x5A5A0000, tx(TxType::Write, 1, 10),
                       kRamBase + kRamWords - 1, 0x5A5AFFFF, tx(TxType::Read, 1, 11), kRamBase, tx(TxType::Read, 1, 12),
                       kRamBase + kRamWords - 1});
  REQUIRE(edges.has_value());
  CHECK(*edges == std::vector<uint32_t>{control(), ok(TxType::Write, 1, 9), ok(TxType::Write, 1, 10), ok(TxType::Read, 1, 11),
                                        0x5A5A0000, ok(TxType::Read, 1, 12), 0x5A5AFFFF});
  CHECK(b.emu_log.empty());
}

TEST_CASE("the emulator's block is reached through the top's port, at its own byte offsets") {
  Board b;
  namespace er = mxtb::emu::reg;
  b.emu[er::id::kOffset] = 0x454D5531;
  auto r = b.send({control(), tx(TxType::Read, 1, 1), kEmuBase + er::id::kOffset / 4, tx(TxType::Write, 1, 2),
                   kEmuBase + er::run_timeout_ns::kOffset / 4, 12345});
  REQUIRE(r.has_value());
  CHECK(*r == std::vector<uint32_t>{control(), ok(TxType::Read, 1, 1), 0x454D5531, ok(TxType::Write, 1, 2)});
  REQUIRE(b.emu_log.size() == 2);
  CHECK_FALSE(b.emu_log[0].write);
  CHECK(b.emu_log[0].offset == er::id::kOffset);
  CHECK(b.emu_log[1].write);
  CHECK(b.emu_log[1].offset == er::run_timeout_ns::kOffset);
  CHECK(b.emu_log[1].data == 12345);
}

TEST_CASE("the emulator's block may answer late or refuse: the top waits for its response and reports a refusal") {
  namespace er = mxtb::emu::reg;
  const uint32_t id = er::id::kOffset, timeout = er::run_timeout_ns::kOffset;
  const std::vector<uint32_t> request{control(), tx(TxType::Read, 1, 1), kEmuBase + id / 4, tx(TxType::Write, 1, 2),
                                      kEmuBase + timeout / 4, 12345, tx(TxType::Read, 1, 3), kEmuBase + timeout / 4};
  const std::vector<uint32_t> expected{control(), ok(TxType::Read, 1, 1), 0x454D5531, ok(TxType::Write, 1, 2),
                                       ok(TxType::Read, 1, 3), 12345};
  // One Board at a time: a model must go while its own VerilatedContext is the thread's.
  auto run = [&](uint32_t latency) {
    Board b;
    b.emu[id] = 0x454D5531;
    b.emu_latency = latency;
    const auto reply = b.send(request);
    REQUIRE(reply.has_value());
    CHECK(*reply == expected);
    return b.timeline.cycles;
  };
  const uint64_t prompt_cycles = run(0);
  // Each of the three accesses waited out the block's 40 cycles, no more and no less.
  CHECK(run(40) == prompt_cycles + 3 * 40);

  // A refusal is the transaction's bus error, whether the block answers at once or late.
  for (uint32_t latency : {0u, 40u}) {
    CAPTURE(latency);
    Board b;
    b.emu_latency = latency;
    b.emu_refuse = {timeout};
    auto w = b.send({control(), tx(TxType::Write, 1, 4), kEmuBase + timeout / 4, 99});
    REQUIRE(w.has_value());
    REQUIRE(w->size() == 2);
    CHECK(((*w)[1] & 0xFu) == static_cast<uint32_t>(InfoCode::WriteError));
    CHECK(b.emu.count(timeout) == 0);
    auto r = b.send({control(), tx(TxType::Read, 1, 5), kEmuBase + timeout / 4});
    REQUIRE(r.has_value());
    REQUIRE_FALSE(r->empty());
    CHECK(((*r)[1] & 0xFu) == static_cast<uint32_t>(InfoCode::ReadError));
    REQUIRE(b.emu_log.size() == 2);
  }
}

// docs/ipbus-rtl.md: an access waits AXI_TIMEOUT cycles for its response (board_bus passes its own,
// 65535, down to the transactor), then answers a read timeout; the emulator's block has none, so
// the wait is made where a board has it: the firmware holds the controller (its read's response
// not taken). Both ways, with margins either side: held for three quarters of that, the IPbus read
// is waited for; for one and a half times, it times out (before send()'s 100,000-cycle limit).
TEST_CASE("an IPbus access waits AXI_TIMEOUT cycles for the controller the firmware holds, then answers a read timeout") {
  namespace reg = mxtb::ocs::reg;
  constexpr uint64_t kAxiTimeout = 65535;
  for (uint64_t hold : {kAxiTimeout * 3 / 4, kAxiTimeout * 3 / 2}) {
    CAPTURE(hold);
    Board b;
    b.fw.push_back({false, reg::version::kOffset, 0});
    b.fw_ready_from = b.cycle + hold;
    for (int i = 0; i < 4; ++i) b.clock();  // the firmware's read granted and answered, not taken
    REQUIRE(b.fw_next == 0);
    const auto r = b.send({control(), tx(TxType::Read, 1, 1), reg::id::kOffset / 4});
    REQUIRE(r.has_value());
    REQUIRE(r->size() >= 2);
    if (hold < kAxiTimeout) {
      CHECK(*r == std::vector<uint32_t>{control(), ok(TxType::Read, 1, 1), reg::id::kReset});
      CHECK(b.timeline.cycles >= hold - 4);
    } else {
      CHECK(((*r)[1] & 0xFu) == static_cast<uint32_t>(InfoCode::ReadTimeout));
      CHECK(b.timeline.cycles >= kAxiTimeout);
      CHECK(b.timeline.cycles < hold - 4);
    }
  }
}

TEST_CASE("the emulator's block may take a request late, its address and data apart: the top offers each until taken") {
  namespace er = mxtb::emu::reg;
  const uint32_t id = er::id::kOffset, timeout = er::run_timeout_ns::kOffset;
  // Two words into one register (non-incrementing), then two reads of it.
  const std::vector<uint32_t> request{control(),          tx(TxType::Read, 1, 1),       kEmuBase + id / 4,
                                      tx(TxType::NonIncWrite, 2, 2), kEmuBase + timeout / 4, 12345,
                                      678,                tx(TxType::NonIncRead, 2, 3), kEmuBase + timeout / 4};
  const std::vector<uint32_t> expected{control(), ok(TxType::Read, 1, 1), 0x454D5531, ok(TxType::NonIncWrite, 2, 2),
                                       ok(TxType::NonIncRead, 2, 3), 678, 678};
  uint64_t prompt_cycles = 0;
  for (auto [delay, w_delay] : {std::pair<uint32_t, uint32_t>{0, 0}, {1, 1}, {6, 6}, {6, 0}, {0, 6}}) {
    CAPTURE(delay);
    CAPTURE(w_delay);
    Board b;  // one at a time: a model must go while its own VerilatedContext is the thread's
    b.emu[id] = 0x454D5531;
    b.emu_accept_delay = delay;
    b.emu_w_accept_delay = w_delay;
    const auto reply = b.send(request);
    REQUIRE(reply.has_value());
    CHECK(*reply == expected);
    // Every word reached the block once, in order, none taken without its write.
    REQUIRE(b.emu_log.size() == 5);
    CHECK(b.emu_log[1].data == 12345);
    CHECK(b.emu_log[2].data == 678);
    CHECK(b.emu_aw_taken.empty());
    CHECK(b.emu_w_taken.empty());
    // Each access offered longer by its slowest channel: three reads, two writes.
    if (delay == 0 && w_delay == 0) prompt_cycles = b.timeline.cycles;
    else CHECK(b.timeline.cycles == prompt_cycles + 3 * delay + 2 * std::max(delay, w_delay));
  }
}

TEST_CASE("status and a bad header: answered and dropped by the top as by the transactor alone") {
  Board b;
  std::vector<uint32_t> status(16, 0);
  status[0] = ipbus::encode(ipbus::PacketHeader{ipbus::PacketType::Status, 0});
  auto s = b.send(status);
  REQUIRE(s.has_value());
  CHECK(s->size() == 16);
  CHECK((*s)[1] == 1472);  // the MTU
  CHECK((*s)[2] == 4);     // reply buffers, as built
  CHECK_FALSE(b.send({0x300000F0u}).has_value());  // version 3: dropped, no bus access
  CHECK(b.emu_log.empty());
}

// Consecutive cycles: a stream moving one word each cycle.
bool one_word_a_cycle(const std::vector<uint64_t>& at) {
  for (size_t i = 1; i < at.size(); ++i)
    if (at[i] != at[i - 1] + 1) return false;
  return !at.empty();
}

TEST_CASE("block transfers stream a word a cycle: requests in, bus words, replies out, after a bounded header latency") {
  Board b;
  // A datagram is taken whole before it runs (a dropped one makes no access) and a reply goes out
  // once its packet ran (each transaction's header carries its outcome), so a block's cycles are
  // its request beats, one per bus word, its reply words, and a header latency (kHeader).
  constexpr uint64_t kHeader = 16;
  for (uint32_t n : {1u, 2u, 64u, 255u}) {
    CAPTURE(n);
    std::vector<uint32_t> write = {control(), tx(TxType::Write, n, 1), kRamBase + 1};
    for (uint32_t i = 0; i < n; ++i) write.push_back(0x1000u + i * 7);
    auto w = b.send(write);
    REQUIRE(w.has_value());
    CHECK(*w == std::vector<uint32_t>{control(), ok(TxType::Write, n, 1)});
    CHECK(one_word_a_cycle(b.timeline.in));
    CHECK(one_word_a_cycle(b.timeline.out));
    const uint64_t write_words = write.size() + n + w->size();
    CHECK(b.timeline.cycles >= write_words);
    CHECK(b.timeline.cycles <= write_words + kHeader);
    MESSAGE(n, "-word RAM write: ", b.timeline.cycles, " cycles = ", write.size(), " in + ", n, " bus + ", w->size(), " out + ",
            b.timeline.cycles - write_words);

    auto r = b.send({control(), tx(TxType::Read, n, 2), kRamBase + 1});
    REQUIRE(r.has_value());
    REQUIRE(r->size() == 2 + n);
    CHECK((*r)[1] == ok(TxType::Read, n, 2));
    for (uint32_t i = 0; i < n; ++i) CHECK((*r)[2 + i] == 0x1000u + i * 7);
    CHECK(one_word_a_cycle(b.timeline.out));
    const uint64_t read_words = 3 + n + r->size();
    CHECK(b.timeline.cycles >= read_words);
    CHECK(b.timeline.cycles <= read_words + kHeader);
    MESSAGE(n, "-word RAM read: ", b.timeline.cycles, " cycles = 3 in + ", n, " bus + ", r->size(), " out + ",
            b.timeline.cycles - read_words);
  }
  // A controller register read: at most 16 cycles beyond its AXI4-Lite access (the controller
  // answers the cycle after its address, so 2), the request and reply words included.
  const uint32_t status = mxtb::ocs::reg::status::kOffset / 4;
  auto s = b.send({control(), tx(TxType::Read, 1, 3), status});
  REQUIRE(s.has_value());
  CHECK(b.timeline.cycles <= 2 + 16);
  MESSAGE("controller STATUS read: ", b.timeline.cycles, " cycles");
  // The emulator's block streams through the top's port too: one request a cycle.
  namespace er = mxtb::emu::reg;
  const uint32_t words = er::ipbus_stats::kCount;
  REQUIRE(words >= 2);
  b.emu_log.clear();
  auto e = b.send({control(), tx(TxType::Read, words, 4), kEmuBase + er::ipbus_stats::kOffset / 4});
  REQUIRE(e.has_value());
  CHECK((*e)[1] == ok(TxType::Read, words, 4));
  REQUIRE(b.emu_log.size() == words);
  for (uint32_t i = 1; i < words; ++i) CHECK(b.emu_log[i].offset == b.emu_log[i - 1].offset + 4);
  CHECK(b.timeline.cycles <= 3 + words + e->size() + kHeader);
}

TEST_CASE("the firmware and the IPbus side share the controller: both served, neither starved, nothing mixed") {
  Board b;
  namespace reg = mxtb::ocs::reg;
  const uint32_t scratch = reg::scratch::kOffset;  // byte offset
  // The firmware writes scratch words 200.. and reads them and the ID back, while IPbus streams
  // 100-word blocks of scratch 0.. in and out.
  for (uint32_t i = 0; i < 20; ++i) b.fw.push_back({true, scratch + 4 * (200 + i), 0xF00D0000u + i});
  for (uint32_t i = 0; i < 20; ++i) b.fw.push_back({false, scratch + 4 * (200 + i), 0});
  b.fw.push_back({false, reg::id::kOffset, 0});
  std::vector<uint32_t> write{control(), tx(TxType::Write, 100, 1), scratch / 4};
  for (uint32_t i = 0; i < 100; ++i) write.push_back(0xABC00000u + i);
  auto w = b.send(write);
  REQUIRE(w.has_value());
  CHECK(*w == std::vector<uint32_t>{control(), ok(TxType::Write, 100, 1)});
  const uint64_t write_end = b.cycle;
  auto r = b.send({control(), tx(TxType::Read, 100, 2), scratch / 4});
  REQUIRE(r.has_value());
  REQUIRE(r->size() == 102);
  for (uint32_t i = 0; i < 100; ++i) CHECK((*r)[2 + i] == 0xABC00000u + i);
  // The firmware was served during the IPbus traffic, not after it: every one of its accesses is
  // done, and its first ones during the write packet (round robin: it goes every other access).
  REQUIRE(b.fw_next == b.fw.size());
  CHECK(b.fw[0].done_cycle < write_end);
  for (uint32_t i = 0; i < 20; ++i) {
    CHECK(b.fw[i].resp == 0);
    CHECK(b.fw[20 + i].result == 0xF00D0000u + i);
  }
  CHECK(b.fw[40].result == reg::id::kReset);
  // The two masters' words did not mix: IPbus's region holds its data, the firmware's its own.
  auto check = b.send({control(), tx(TxType::Read, 1, 3), scratch / 4 + 99, tx(TxType::Read, 1, 4), scratch / 4 + 219});
  REQUIRE(check.has_value());
  CHECK(*check == std::vector<uint32_t>{control(), ok(TxType::Read, 1, 3), 0xABC00063u, ok(TxType::Read, 1, 4), 0xF00D0013u});
}
