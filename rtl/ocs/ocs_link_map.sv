// What each lane's link layer should expect, from the active port map. The board wires lane l of
// XPU x to mesh port x * LANES + l (link index = port index), so a circuit from port i to port t
// means link i must train with XPU t / LANES, lane t % LANES, and checks that it does. A link
// without a circuit checks nothing: routing sends its light round to an unused output (the spare's
// lanes end up in loopback, lit, which is what lets a commit verify the spare's light before it
// takes over). A link whose circuit changes is told to retrain, so after a commit (a failover to
// the spare) it trains with its new peer at once instead of waiting for its old one. Unmapped
// links check nothing, so when a commit ends (passed or rolled back: the mesh moved either way)
// they retrain too: an unchecked link must never keep running on a path that now ends at
// another transmitter.
module ocs_link_map #(
  parameter int N_PORTS = 32,
  parameter int N_LINKS = 20,  // at most N_PORTS
  parameter int LANES   = 4    // lanes per XPU: a power of two
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  logic [N_PORTS*7-1:0] active_map_i,   // per port {valid, target[5:0]}
  input  logic                 commit_end_i,   // pulse: a commit passed, was a no-op, failed or rolled back
  output logic [N_LINKS-1:0]   link_check_o,   // a circuit is mapped: check the peer
  output logic [N_LINKS*8-1:0] link_expect_xpu_o,
  output logic [N_LINKS*8-1:0] link_expect_lane_o,
  output logic [N_LINKS-1:0]   link_retrain_o  // one clock when the link's circuit changed
);

  localparam int LaneBits = $clog2(LANES);

  logic [N_LINKS*7-1:0] prev_q;

  always_comb begin
    for (int i = 0; i < N_LINKS; i++) begin
      logic [6:0] entry;
      logic [7:0] target;
      entry  = active_map_i[i*7 +: 7];
      target = {2'b00, entry[5:0]};
      link_check_o[i]           = entry[6];
      link_expect_xpu_o[i*8 +: 8]  = target >> LaneBits;
      link_expect_lane_o[i*8 +: 8] = target & 8'(LANES - 1);
      link_retrain_o[i]         = entry[6] ? entry != prev_q[i*7 +: 7] : commit_end_i;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      prev_q <= '0;
    end else begin
      prev_q <= active_map_i[N_LINKS*7-1:0];
    end
  end

endmodule
