// Formal harness (rtl/formal/pair): one direction of an optical lane between two link_endpoints,
// with a free choice per cycle (mode_i, pos_i are unconstrained top-level inputs) of what the lane
// does to the 66-bit word:
//   0 pass   the word as sent
//   1 erase  the sync header replaced by 00 (an invalid header: the PCS's error block), payload
//            intact, so the descrambler stays in step; any number, any time
//   2 flip   exactly one of the 66 bits inverted (pos_i < 66). At least FLIP_GAP cycles between two
//            flips, so no frame (4 blocks at MAX_WORDS=2) and no control block ever carries more
//            than one flip. One flip is 1 bit on the lane, 3 bits after the x^58+x^39+1
//            descrambler (t, t+39, t+58): CRC-32 detects every error of up to 3 bits in any frame
//            this short (Hamming distance >= 4 up to 91607 bits), and an exhaustive check of all
//            64 payload positions (both words a flip reaches, every type change, the identities
//            used here) found none that keeps a control block's 24-bit check valid. Arbitrary
//            words are not offered: a solver can always pick one with a matching CRC.
//   3 dark   no light: the word is 0 and signal detect drops at once
// A lane whose transmitter has its laser off is dark too. The fibre takes one cycle (a register:
// the endpoints' tx and rx paths are combinational, so without it the two would form a loop).
// Signal detect rises one cycle after light arrives (this word and the previous one lit), as a
// CDR does, so the first block the receiver sees after darkness is a lit one; it drops with the
// first dark word. ALLOW_* = 0 forbid a mode (by assumption).
`include "mxtb_assert.svh"

module pair_channel #(
  parameter int FLIP_GAP    = 8,
  parameter bit ALLOW_ERASE = 1'b1,
  parameter bit ALLOW_FLIP  = 1'b1,
  parameter bit ALLOW_DARK  = 1'b1
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic [65:0] tx_i,
  input  logic        laser_i,
  input  logic [1:0]  mode_i,
  input  logic [6:0]  pos_i,
  output logic [65:0] rx_o,
  output logic        sd_o,
  output logic        clean_o   // this cycle passes the word (or the laser is off)
);
  localparam logic [1:0] MPass = 2'd0, MErase = 2'd1, MFlip = 2'd2, MDark = 2'd3;

  logic        lit, lit_q, lit_qq;
  logic [65:0] word, word_q;
  logic [7:0]  gap_q;

  assign lit     = laser_i && mode_i != MDark;
  assign word    = !lit ? 66'h0 :
                   mode_i == MErase ? {tx_i[65:2], 2'b00} :
                   mode_i == MFlip  ? tx_i ^ (66'h1 << pos_i) : tx_i;
  assign rx_o    = word_q;
  assign sd_o    = lit_q && lit_qq;
  assign clean_o = mode_i == MPass;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      word_q <= '0;
      lit_q  <= 1'b0;
      lit_qq <= 1'b0;
      gap_q  <= 8'hFF;
    end else begin
      word_q <= word;
      lit_q  <= lit;
      lit_qq <= lit_q;
      gap_q <= mode_i == MFlip ? 8'd0 : (gap_q == 8'hFF ? gap_q : gap_q + 8'd1);
    end
  end

  `ASSUME(chan_flip_pos, mode_i != MFlip || pos_i < 7'd66)
  `ASSUME(chan_flip_gap, mode_i != MFlip || gap_q >= 8'(FLIP_GAP))
  `ASSUME(chan_allow_erase, ALLOW_ERASE || mode_i != MErase)
  `ASSUME(chan_allow_flip, ALLOW_FLIP || mode_i != MFlip)
  `ASSUME(chan_allow_dark, ALLOW_DARK || mode_i != MDark)
endmodule
