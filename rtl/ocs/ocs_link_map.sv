// What each lane's link layer should expect, from the active port map. The board wires lane l of
// XPU x to mesh port x * LANES + l (link index = port index), so a circuit from port i to port t
// means link i must train with XPU t / LANES, lane t % LANES, and checks that it does. A link
// without a circuit checks nothing: routing sends its light round to an unused output (the spare's
// lanes end up in loopback, lit, which is what lets a commit verify the spare's light before it
// takes over). A link whose circuit changes is told to retrain, so after a commit (a failover to
// the spare) it trains with its new peer at once instead of waiting for its old one. Unmapped
// links check nothing, so when a commit ends (passed or rolled back: the mesh moved either way)
// they retrain too: an unchecked link must never keep running on a path that now ends at
// another transmitter. While a commit moves the elements (and moves them back, on a rollback), an
// unmapped link expects no one (an identity no lane has): a path passing another lane's light for
// a few microseconds must not become its peer. It trained that far once, flushed its sequence
// state for the passing peer and, back on its old path after the rollback, lost the frames its
// old peer still expected. Held Disabled for that wrong peer it stays lit for verify, and it
// retrains when the commit ends. For the same reason a mapped link held Disabled for a wrong peer retrains
// when a commit ends: while elements moved (or moved back, on a rollback) its path can pass
// another XPU's light long enough to train to it; its circuit may not change at all, so nothing
// else would ever take it out of Disabled. A peer that is really wrong (swapped fibres) is found
// wrong again.
//
// XPU numbers are the rack's: lane l of the board's XPU x is XPU xpu_base_i + x, lane l, so that a
// link trained across a fibre to another board can tell that board's XPUs from its own (a board
// alone has base 0). The base plus the board's XPUs stays below NoOne (the rack checks it).
//
// A circuit to a fibre port (a port at or beyond N_LINKS, which no lane sits on: in a rack, the
// light leaves towards another server's mesh) ends at a lane this board cannot name, so the link
// checks nothing, like an unmapped link, and expects no one while a commit runs. It retrains when
// its circuit changes, and when a commit ends while it is not Active: training unchecked, it may
// have trained towards light that passed while the elements moved, or be half way through with
// a far end that restarted (the rack's bring-up commits the light from the fibres last, and both
// ends start again together). An Active link whose circuit did not change keeps running: its path
// through this mesh did not move, and a transmitter that changed at the fibre's far end is
// refused by the link layer (blocks bound to their sender), which retrains it; the host's commit
// across boards leaves such a link unmapped in its first phase anyway. Whoever sets the circuits
// across boards checks the peer the link trained to (its LINK_PEER register).
//
// A placement across boards is several commits, one board after another, and between two of them
// the light in a fibre can already be the new one at one end while the other end still routes it
// along its old path, to a lane now without a circuit or to a fibre circuit; unchecked, such a
// lane trained to the passing XPU, became Active with it, and flushed the frames its real peer
// still expected (rack-2x1's failover to a spare in another server lost 7 messages so). The host
// therefore holds the links (LINK_HOLD, hold_i) on every board of the placement from before the
// first commit to after the last: while held, every link expects as while a commit runs, and the
// hold's end retrains them as a commit's end does.
`include "mxtb_assert.svh"

module ocs_link_map #(
  parameter int N_PORTS = 32,
  parameter int N_LINKS = 20,  // at most N_PORTS
  parameter int LANES   = 4    // lanes per XPU: a power of two
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  logic [N_PORTS*7-1:0] active_map_i,   // per port {valid, target[5:0]}
  input  logic [7:0]           xpu_base_i,     // this board's first XPU number in its rack (straps; 0 alone)
  input  logic                 commit_end_i,   // pulse: a commit passed, was a no-op, failed or rolled back
  input  logic                 commit_busy_i,  // a commit is validating, programming, settling, verifying or rolling back
  input  logic                 hold_i,         // LINK_HOLD: expect as while a commit runs; its end acts as a commit's
  input  logic [N_LINKS*4-1:0] link_state_i,   // link_pkg state of each link
  input  logic [N_LINKS*4-1:0] link_reason_i,  // link_pkg reason of each link
  output logic [N_LINKS-1:0]   link_check_o,   // a circuit is mapped: check the peer
  output logic [N_LINKS*8-1:0] link_expect_xpu_o,
  output logic [N_LINKS*8-1:0] link_expect_lane_o,
  output logic [N_LINKS-1:0]   link_retrain_o  // one clock: the circuit changed, or a commit ended (see above)
);

  localparam int LaneBits = $clog2(LANES);
  localparam logic [7:0] NoOne = 8'hFF;  // no lane has this XPU id (at most 64 ports)

  logic [N_LINKS*7-1:0] prev_q;
  logic                 hold_q;          // hold_i at the last edge
  logic                 expecting_none;  // a commit runs or the host holds the links
  logic                 ended;           // a commit ended or the hold did

  assign expecting_none = commit_busy_i || hold_i;
  assign ended          = commit_end_i || (hold_q && !hold_i);

  always_comb begin
    for (int i = 0; i < N_LINKS; i++) begin
      logic [6:0] entry;
      logic [7:0] target;
      logic       wrong_peer;
      logic       to_fibre;  // the circuit leaves the board through a fibre port
      logic       checked;   // the circuit ends at a lane of this board, whose identity is known
      entry  = active_map_i[i*7 +: 7];
      target = {2'b00, entry[5:0]};
      to_fibre = entry[6] && target >= 8'(N_LINKS);
      checked  = entry[6] && !to_fibre;
      link_check_o[i]           = checked || expecting_none;
      link_expect_xpu_o[i*8 +: 8]  = checked ? xpu_base_i + (target >> LaneBits) : NoOne;
      link_expect_lane_o[i*8 +: 8] = checked ? target & 8'(LANES - 1) : NoOne;
      wrong_peer                = link_state_i[4*i +: 4] == link_pkg::StDisabled &&
                                  link_reason_i[4*i +: 4] == link_pkg::RsnWrongPeer;
      link_retrain_o[i]         = checked  ? (entry != prev_q[i*7 +: 7] || (ended && wrong_peer))
                                : to_fibre ? (entry != prev_q[i*7 +: 7] ||
                                              (ended && link_state_i[4*i +: 4] != link_pkg::StActive))
                                           : ended;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      prev_q <= '0;
      hold_q <= 1'b0;
    end else begin
      prev_q <= active_map_i[N_LINKS*7-1:0];
      hold_q <= hold_i;
    end
  end

  // ---------------------------------------------------------------- assertions
  // The rules above (docs/ocs-controller.md), each both ways, per link, from the active map's
  // own entry and its copy at the last edge (not prev_q): a circuit to a lane checks that lane's
  // XPU and lane; one to a fibre port and a link without a circuit check no one and expect no one
  // (checking while a commit runs, against no one); a circuit to a lane retrains exactly when it
  // changes or a commit ends while the link is held Disabled for a wrong peer; one to a fibre port
  // exactly when it changes or a commit ends while the link is not Active; a link without a
  // circuit exactly when a commit ends. The host's hold counts as a commit running, and its end
  // (held at the last edge, not now) as a commit's end.
  `ASSERT_RESET_START
`ifdef MXTB_ASSERT_ON
  `ASSERT_PAST_RESET
  `ASSERT_PAST(f_p_map, N_LINKS*7, active_map_i[N_LINKS*7-1:0])
  `ASSERT_PAST(f_p_hold, 1, hold_i)
  logic f_busy, f_end;
  assign f_busy = commit_busy_i || hold_i;
  assign f_end  = commit_end_i || (f_past_rst_n && f_p_hold && !hold_i);
  // Per link, in the rules' words: which links have a circuit to a lane, to a fibre port, none;
  // what each expects; when each must retrain. (Vectors, not a generate loop of assertions: Yosys
  // 0.23 names a loop's labelled assertions alike.)
  logic [N_LINKS-1:0]   f_lane, f_fibre, f_none, f_changed, f_held_wrong, f_active;
  logic [N_LINKS*8-1:0] f_xpu, f_lane_id;
  always_comb begin
    for (int i = 0; i < N_LINKS; i++) begin
      logic [6:0] entry, was;
      entry           = active_map_i[i*7 +: 7];
      was             = f_past_rst_n ? f_p_map[i*7 +: 7] : 7'd0;  // before reset ended: no circuit
      f_lane[i]       = entry[6] && 32'(entry[5:0]) < N_LINKS;
      f_fibre[i]      = entry[6] && 32'(entry[5:0]) >= N_LINKS;
      f_none[i]       = !entry[6];
      f_changed[i]    = entry != was;
      f_held_wrong[i] = link_state_i[4*i +: 4] == link_pkg::StDisabled &&
                        link_reason_i[4*i +: 4] == link_pkg::RsnWrongPeer;
      f_active[i]     = link_state_i[4*i +: 4] == link_pkg::StActive;
      f_xpu[i*8 +: 8]     = f_lane[i] ? xpu_base_i + 8'(32'(entry[5:0]) / LANES) : NoOne;  // the rack's XPU numbers
      f_lane_id[i*8 +: 8] = f_lane[i] ? 8'(32'(entry[5:0]) % LANES) : NoOne;
    end
  end
  `ASSERT(map_check_only_lane_circuits, link_check_o == (f_lane | {N_LINKS{f_busy}}))
  `ASSERT(map_expect_is_target_lane, link_expect_xpu_o == f_xpu && link_expect_lane_o == f_lane_id)
  `ASSERT(map_retrain_lane_rule, ((link_retrain_o ^ (f_changed | ({N_LINKS{f_end}} & f_held_wrong))) & f_lane) == '0)
  `ASSERT(map_retrain_fibre_rule, ((link_retrain_o ^ (f_changed | ({N_LINKS{f_end}} & ~f_active))) & f_fibre) == '0)
  `ASSERT(map_retrain_unmapped_rule, ((link_retrain_o ^ {N_LINKS{f_end}}) & f_none) == '0)
  `COVER(cov_map_fibre_circuit, (f_fibre & link_retrain_o) != '0)
  `COVER(cov_map_hold_ends, f_past_rst_n && f_p_hold && !hold_i && !commit_end_i && (f_none & link_retrain_o) != '0)
  `COVER(cov_map_held_fibre_checks, hold_i && !commit_busy_i && (f_fibre & link_check_o) != '0)
`endif

endmodule
