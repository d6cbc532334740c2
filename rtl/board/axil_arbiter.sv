// Two AXI4-Lite masters onto one slave, one transaction at a time: the board's IPbus side
// (board_bus's controller port) and the firmware (the processor on the board that runs the
// failover fast path: firmware/) share the optical switch controller's register slave, as the
// emulator's bus mutex has them share it. docs/board.md.
//
// A master is granted a transaction when it offers a request (ARVALID, or AWVALID or WVALID) and
// the slave is free; the grant holds until the slave's response to it is taken (R or B). A grant
// may be made in the cycle the previous response is taken, so a master that streams keeps a word
// a cycle while the other is idle. When both request, the one not granted last goes first (round
// robin), so neither starves the other. A master offering a read and a write at once gets the read.
`include "mxtb_assert.svh"
`include "axi_ports.svh"

module axil_arbiter (
  input  logic        clk_i,
  input  logic        rst_ni,
  // the masters: bit i of each one-bit port, bits [32i+31:32i] of each word (Yosys 0.23 takes
  // neither unpacked nor packed arrays as ports)
  input  logic [63:0] s_awaddr,
  input  logic [1:0]  s_awvalid,
  output logic [1:0]  s_awready,
  input  logic [63:0] s_wdata,
  input  logic [7:0]  s_wstrb,
  input  logic [1:0]  s_wvalid,
  output logic [1:0]  s_wready,
  output logic [1:0]  s_bresp,
  output logic [1:0]  s_bvalid,
  input  logic [1:0]  s_bready,
  input  logic [63:0] s_araddr,
  input  logic [1:0]  s_arvalid,
  output logic [1:0]  s_arready,
  output logic [31:0] s_rdata,
  output logic [1:0]  s_rresp,
  output logic [1:0]  s_rvalid,
  input  logic [1:0]  s_rready,
  // the slave
  `AXIL_MASTER_PORTS(m_)
);
  // The transaction granted: whose, a read or a write; open until its response is taken.
  logic busy_q, owner_q, read_q, last_q;

  logic [1:0] req_r, req_w, req;
  assign req_r = s_arvalid;
  assign req_w = s_awvalid | s_wvalid;
  assign req = req_r | req_w;

  // Responses go to the owner of the open transaction.
  assign m_rready = busy_q && read_q && s_rready[owner_q];
  assign m_bready = busy_q && !read_q && s_bready[owner_q];
  logic done_now, free;
  assign done_now = busy_q && (read_q ? m_rvalid && m_rready : m_bvalid && m_bready);
  assign free = !busy_q || done_now;

  // A new grant, when the slave is free: the master not granted last if it asks, else the other.
  logic pick, grant;
  assign pick = req[!last_q] ? !last_q : last_q;
  assign grant = free && req != 2'b00;
  logic owner, is_read, active;
  assign owner = grant ? pick : owner_q;
  assign is_read = grant ? req_r[pick] : read_q;
  assign active = grant || (busy_q && !done_now);

  always_comb begin
    m_arvalid = active && is_read && s_arvalid[owner];
    m_araddr = owner ? s_araddr[63:32] : s_araddr[31:0];
    m_awvalid = active && !is_read && s_awvalid[owner];
    m_awaddr = owner ? s_awaddr[63:32] : s_awaddr[31:0];
    m_wvalid = active && !is_read && s_wvalid[owner];
    m_wdata = owner ? s_wdata[63:32] : s_wdata[31:0];
    m_wstrb = owner ? s_wstrb[7:4] : s_wstrb[3:0];
    s_arready = '0;
    s_awready = '0;
    s_wready = '0;
    s_arready[owner] = active && is_read && m_arready;
    s_awready[owner] = active && !is_read && m_awready;
    s_wready[owner] = active && !is_read && m_wready;
    s_rvalid = '0;
    s_bvalid = '0;
    s_rvalid[owner_q] = busy_q && read_q && m_rvalid;
    s_bvalid[owner_q] = busy_q && !read_q && m_bvalid;
  end
  assign s_rdata = m_rdata;
  assign s_rresp = m_rresp;
  assign s_bresp = m_bresp;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q <= 1'b0;
      owner_q <= 1'b0;
      read_q <= 1'b0;
      last_q <= 1'b1;   // master 0 first
    end else if (free) begin
      busy_q <= grant;
      if (grant) begin
        owner_q <= pick;
        read_q <= req_r[pick];
        last_q <= pick;
      end
    end
  end

  // ---- invariants (docs/board.md) and coverage ----
  `ASSERT_RESET_START
  // What each side has open, from its own handshakes alone.
`ifdef MXTB_ASSERT_ON
  logic [1:0] f_open;   // per master: a request taken whose response is not yet taken
  logic [1:0] f_open_after;  // the same once this cycle's responses are taken
  logic f_slave_open;
  assign f_open_after = f_open & ~(s_rvalid & s_rready) & ~(s_bvalid & s_bready);
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      f_open <= '0;
      f_slave_open <= 1'b0;
    end else begin
      for (int i = 0; i < 2; i++)
        f_open[i] <= (s_arvalid[i] && s_arready[i]) || (s_awvalid[i] && s_awready[i]) || (s_wvalid[i] && s_wready[i]) ||
                     (f_open[i] && !(s_rvalid[i] && s_rready[i]) && !(s_bvalid[i] && s_bready[i]));
      f_slave_open <= (m_arvalid && m_arready) || (m_awvalid && m_awready) || (m_wvalid && m_wready) ||
                      (f_slave_open && !(m_rvalid && m_rready) && !(m_bvalid && m_bready));
    end
  end
  // The slave answers only what it was asked (its side of AXI4-Lite).
  `ASSUME(arb_env_slave_answers_requests, !(m_rvalid || m_bvalid) || f_slave_open)
  // Who asks, from the masters' valids alone, and who was granted last (master 1 before any grant,
  // so master 0 goes first), kept apart from the arbiter's own request and round-robin registers.
  logic [1:0] f_asks;
  logic f_granted_last;
  assign f_asks = s_arvalid | s_awvalid | s_wvalid;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) f_granted_last <= 1'b1;
    else if (grant) f_granted_last <= pick;
  end
`endif
  // Never both masters with a transaction open: one at a time on the slave.
  `ASSERT(arb_one_master_open, f_open != 2'b11)
  // A response reaches only the master whose transaction is open, and only the kind it asked.
  `ASSERT(arb_response_to_owner, (s_rvalid | s_bvalid) == '0 || ((s_rvalid | s_bvalid) & ~f_open) == '0)
  `ASSERT(arb_one_response, !((s_rvalid | s_bvalid) == 2'b11))
  // A request reaches the slave only while the other master has nothing open (its response, if
  // any, taken by this cycle).
  `ASSERT(arb_request_alone, !(m_arvalid || m_awvalid || m_wvalid) || !f_open_after[!owner])
  // The grant covers whatever is open: the slave's transaction is the owner's, the owner's alone.
  `ASSERT(arb_open_is_granted, (f_open == '0 || (busy_q && f_open[owner_q] && !f_open[!owner_q])) && (!f_slave_open || busy_q))
  `ASSERT(arb_slave_open_is_masters, f_slave_open == (f_open != '0))
  // A free slave serves a master that asks, and a request reaches it only when one asks.
  `ASSERT(arb_free_slave_serves, (free && req != 2'b00) == (free && (m_arvalid || m_awvalid || m_wvalid)))
  // A master offering a read and a write at once gets the read.
  `ASSERT(arb_read_first, !(grant && s_arvalid[pick] && (s_awvalid[pick] || s_wvalid[pick])) || (m_arvalid && !m_awvalid && !m_wvalid))
  // Round robin: with both asking at a grant, the one not granted last goes.
  `ASSERT(arb_round_robin, !(grant && f_asks == 2'b11) || pick != f_granted_last)
  // The round-robin register is the last grant (master 1 from reset): the induction's helper.
  `ASSERT(arb_last_is_last_grant, last_q == f_granted_last)
  `COVER(cov_arb_grant_ipbus, grant && pick == 1'b0)
  `COVER(cov_arb_grant_firmware, grant && pick == 1'b1)
  `COVER(cov_arb_contended, grant && req == 2'b11)
  `COVER(cov_arb_streamed, grant && busy_q)
endmodule
