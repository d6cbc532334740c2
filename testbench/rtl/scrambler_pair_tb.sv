// Test top: a scrambler and a descrambler so the C++ test can check both against the software
// reference, and that the pair is the identity once the descrambler has synchronized.
module scrambler_pair_tb (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        en_i,
  input  logic [63:0] data_i,      // plain text into the scrambler
  output logic [63:0] scrambled_o,
  input  logic [63:0] line_i,      // what the descrambler receives (the test may corrupt it)
  output logic [63:0] descrambled_o
);
  scrambler58 u_scr (.clk_i, .rst_ni, .en_i, .data_i, .data_o(scrambled_o));
  descrambler58 u_dscr (.clk_i, .rst_ni, .en_i, .data_i(line_i), .data_o(descrambled_o));
endmodule
