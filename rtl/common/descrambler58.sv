// Descrambler for scrambler58: x[t] = y[t] ^ y[t-39] ^ y[t-58]. It depends only on received
// bits, so it synchronizes itself after 58 bits whatever state it starts in.
module descrambler58 (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        en_i,
  input  logic [63:0] data_i,
  output logic [63:0] data_o
);

  logic [57:0] state_q;

  assign data_o[38:0]  = data_i[38:0]  ^ state_q[57:19] ^ state_q[38:0];
  assign data_o[57:39] = data_i[57:39] ^ data_i[18:0]   ^ state_q[57:39];
  assign data_o[63:58] = data_i[63:58] ^ data_i[24:19]  ^ data_i[5:0];

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= '0;
    end else if (en_i) begin
      state_q <= data_i[63:6];
    end
  end

endmodule
