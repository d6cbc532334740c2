// Formal harness (rtl/formal/pair): the XPU on each side of a link pair.
//
// pair_xpu_tx offers a word whenever valid_i says so (a free input) and counts the words the link
// took: word n of the XPU tagged TAG is {TAG, 15'h0, last, 24'h0, n[7:0]}, last = tx_last_i (a free
// input), so the receiving checker can tell who sent it, which it is and whether it ended a message.
//
// pair_xpu_rx checks every word the link delivers (rx_valid_o && rx_ready_i; rx_ready_i is a free
// input) against its peer's sender, with no peer change (the two-endpoint harness): it is the
// peer's, the next one it sent (in order, none lost, none twice), intact, with rx_last_o exactly
// where the sender put tx_last_i; and never more are delivered than were sent.
`include "mxtb_assert.svh"

module pair_xpu_tx #(
  parameter logic [15:0] TAG = 16'h0
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        valid_i,
  input  logic        last_i,
  output logic [63:0] tx_data_o,
  output logic        tx_valid_o,
  output logic        tx_last_o,
  input  logic        tx_ready_i,
  output logic [7:0]  sent_o
);
  logic [7:0] cnt_q;
  assign tx_valid_o = valid_i;
  assign tx_last_o  = last_i;
  assign tx_data_o  = {TAG, 15'h0, last_i, 24'h0, cnt_q};
  assign sent_o     = cnt_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) cnt_q <= '0;
    else if (valid_i && tx_ready_i) cnt_q <= cnt_q + 8'd1;
  end
endmodule

module pair_xpu_rx #(
  parameter logic [15:0] PEER_TAG = 16'h0
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic [63:0] rx_data_i,
  input  logic        rx_valid_i,
  input  logic        rx_last_i,
  input  logic        rx_ready_i,
  input  logic [7:0]  peer_sent_i,
  output logic [7:0]  recv_o,
  output logic        fire_o
);
  logic [7:0] exp_q;
  logic       fire;
  assign fire   = rx_valid_i && rx_ready_i;
  assign fire_o = fire;
  assign recv_o = exp_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) exp_q <= '0;
    else if (fire) exp_q <= exp_q + 8'd1;
  end
  // The word is the peer's and well formed (no foreign or corrupted word).
  `ASSERT(pair_rx_from_peer, !fire || (rx_data_i[63:48] == PEER_TAG && rx_data_i[47:33] == 15'h0 &&
          rx_data_i[31:8] == 24'h0))
  // It is the next word the peer sent: in order, none lost, none twice.
  `ASSERT(pair_rx_in_order, !fire || rx_data_i[7:0] == exp_q)
  // Message boundaries survive: rx_last_o exactly on the word the sender marked tx_last_i.
  `ASSERT(pair_rx_last_intact, !fire || rx_last_i == rx_data_i[32])
  // Nothing delivered that was not sent (the counters cannot wrap within the checked depth).
  `ASSERT(pair_rx_not_ahead, (peer_sent_i - exp_q) < 8'h80)
endmodule
