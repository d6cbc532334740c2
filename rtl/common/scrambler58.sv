// Self-synchronizing scrambler x^58 + x^39 + 1 (IEEE 802.3 clause 49), 64 bits per cycle.
// Bit 0 of data_i is first in time. Each output bit is y[t] = x[t] ^ y[t-39] ^ y[t-58];
// the three slices below unroll that recurrence for one word as plain XOR equations, with
// state_q holding the last 58 scrambled bits (bit 57 the newest).
module scrambler58 (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        en_i,
  input  logic [63:0] data_i,
  output logic [63:0] data_o
);

  logic [57:0] state_q;
  logic [38:0] out_lo;
  logic [18:0] out_mid;
  logic [5:0]  out_hi;

  assign out_lo  = data_i[38:0]  ^ state_q[57:19] ^ state_q[38:0];
  assign out_mid = data_i[57:39] ^ out_lo[18:0]   ^ state_q[57:39];
  assign out_hi  = data_i[63:58] ^ out_lo[24:19]  ^ out_lo[5:0];
  assign data_o  = {out_hi, out_mid, out_lo};

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= '1;
    end else if (en_i) begin
      state_q <= data_o[63:6];
    end
  end

endmodule
