#!/usr/bin/env python3
"""tools/mutate.py's reviewer operators (issue 43) on a fixture module: each makes the mutants a
reviewer would write by hand, at every site it must, and none where it must not (the reset
branch, assertions, declarations, a nonblocking assignment taken for a comparison)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
import mutate  # noqa: E402

FIXTURE = """\
`include "mxtb_assert.svh"
module fix #(
  parameter int WINDOW = 8,
  parameter int LIMIT  = 3
) (
  input  logic clk_i,
  input  logic rst_ni,
  input  logic bad_i,
  input  logic go_i,
  output logic over_o
);
  logic [3:0] st_q, st_d, rsn_q, rsn_d;
  logic [7:0] cnt_q, cnt_d, win_q, win_d;
  logic       flag_q;
  assign over_o = cnt_q > 8'(LIMIT) && st_q == 4'd1;
  always_comb begin
    st_d  = st_q;
    rsn_d = rsn_q;
    win_d = win_q + 8'd1;
    cnt_d = cnt_q + (bad_i ? 8'd1 : 8'd0);
    if (win_q >= 8'(WINDOW - 1)) begin
      win_d = '0;
      cnt_d = '0;
    end
    if (go_i && bad_i) begin
      st_d  = Pkg::StA;
      rsn_d = Pkg::RsnX;
    end else if (cnt_q <= 8'(LIMIT)) begin
      st_d  = Pkg::StB;
      rsn_d = Pkg::RsnY;
    end
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      st_q   <= 4'd0;
      rsn_q  <= 4'd2;
      cnt_q  <= '0;
      win_q  <= '0;
      flag_q <= 1'b0;
    end else begin
      st_q  <= st_d;
      rsn_q <= rsn_d;
      cnt_q <= cnt_d;
      win_q <= win_d;
      if (go_i) flag_q <= 1'b0; else flag_q <= bad_i || flag_q;
    end
  end
  `ASSERT(fix_never_over, !(cnt_q > 8'(LIMIT) && win_q == 0))
endmodule
"""

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def mutated_lines(op):
    out = []
    for site in mutate.reviewer_sites(FIXTURE):
        if site[4] == op:
            out.append((site[0] + 1, mutate.apply(FIXTURE, site).split("\n")[site[0]].strip()))
    return out


def norm(s):
    return " ".join(s.split())


def has(op, line, text):
    return any(n == line and norm(t) == norm(text) for n, t in mutated_lines(op))


ln = {k: FIXTURE.split("\n").index(next(l for l in FIXTURE.split("\n") if l.strip().startswith(k))) + 1 for k in
      ("assign over_o", "win_d = '0", "cnt_d = '0", "if (win_q", "if (go_i && bad_i)", "end else if (cnt_q",
       "st_d  = Pkg::StA", "rsn_d = Pkg::RsnY", "if (go_i) flag_q", "cnt_q  <= '0", "`ASSERT")}

# clear-drop: the window's clears keep the old value; the flag's clear outside reset too; never the
# reset branch.
expect(has("clear-drop", ln["win_d = '0"], "win_d = win_q;"), "clear-drop: win_d = '0 -> win_q")
expect(has("clear-drop", ln["cnt_d = '0"], "cnt_d = cnt_q;"), "clear-drop: cnt_d = '0 -> cnt_q")
expect(has("clear-drop", ln["if (go_i) flag_q"], "if (go_i) flag_q <= flag_q; else flag_q <= bad_i || flag_q;"),
       "clear-drop: flag_q <= 1'b0 outside reset -> flag_q")
expect(not any(n == ln["cnt_q  <= '0"] for n, _ in mutated_lines("clear-drop")), "clear-drop: not in the reset branch")
expect(not has("clear-drop", ln["rsn_d = Pkg::RsnY"], "rsn_d = rsn_q;"), "clear-drop: RsnY is no reset value")
# term-drop: each term of a guard and of an output's condition.
expect(has("term-drop", ln["if (go_i && bad_i)"], "if ( bad_i) begin"), "term-drop: first term of the guard")
expect(has("term-drop", ln["if (go_i && bad_i)"], "if (go_i ) begin"), "term-drop: last term of the guard")
expect(has("term-drop", ln["assign over_o"], "assign over_o = st_q == 4'd1;"), "term-drop: output's first term")
expect(has("term-drop", ln["assign over_o"], "assign over_o = cnt_q > 8'(LIMIT) ;"), "term-drop: output's last term")
expect(has("term-drop", ln["if (go_i) flag_q"], "if (go_i) flag_q <= 1'b0; else flag_q <= flag_q;"),
       "term-drop: a flag's step")
# edge-move: both ways for < <= > >=, == to >=; a nonblocking assignment is no comparison.
expect(has("edge-move", ln["if (win_q"], "if (win_q > 8'(WINDOW - 1)) begin"), "edge-move: >= to >")
expect(has("edge-move", ln["end else if (cnt_q"], "end else if (cnt_q < 8'(LIMIT)) begin"), "edge-move: <= to <")
expect(has("edge-move", ln["assign over_o"], "assign over_o = cnt_q >= 8'(LIMIT) && st_q == 4'd1;"), "edge-move: > to >=")
expect(has("edge-move", ln["assign over_o"], "assign over_o = cnt_q > 8'(LIMIT) && st_q >= 4'd1;"), "edge-move: == to >=")
nba_lines = [i + 1 for i, l in enumerate(FIXTURE.split("\n")) if "<=" in l and "if (" not in l and "ASSERT" not in l
             and "cnt_q <= 8'" not in l]
expect(not any(n in nba_lines for n, _ in mutated_lines("edge-move")), "edge-move: no nonblocking assignment moved")
# param-scale: every use doubled and halved, the declarations not.
expect(has("param-scale", ln["if (win_q"], "if (win_q >= 8'((WINDOW * 2) - 1)) begin"), "param-scale: doubled")
expect(has("param-scale", ln["if (win_q"], "if (win_q >= 8'((WINDOW / 2) - 1)) begin"), "param-scale: halved")
expect(not any(n in (3, 4) for n, _ in mutated_lines("param-scale")), "param-scale: not the declarations")
# branch-swap: a branch's next state and reason take the sibling branch's.
expect(has("branch-swap", ln["st_d  = Pkg::StA"], "st_d = Pkg::StB;"), "branch-swap: state from the sibling")
expect(has("branch-swap", ln["rsn_d = Pkg::RsnY"], "rsn_d = Pkg::RsnX;"), "branch-swap: reason from the sibling")
# Nothing in assertions.
expect(not any(s[0] + 1 == ln["`ASSERT"] for s in mutate.reviewer_sites(FIXTURE)), "no site in an assertion")
# The operator groups parse, and an unknown one is refused.
expect(set(mutate.parse_operators("reviewer")) == set(mutate.REVIEWER_OPERATORS), "--operators reviewer")
try:
    mutate.parse_operators("no-such-op")
    failures.append("--operators: an unknown operator is refused")
except mutate.UsageError:
    pass
# The real RTL: every reviewer operator has sites in the link layer, and no mutant leaves its line unchanged.
for f in ("rtl/link/link_train.sv", "rtl/link/link_tx.sv", "rtl/ocs/ocs_sequencer.sv"):
    text = (mutate.ROOT / f).read_text()
    s = mutate.reviewer_sites(text)
    for site in s:
        expect(mutate.apply(text, site) != text, f"{f}:{site[0] + 1}: {site[4]} changes nothing")
    if f == "rtl/link/link_train.sv":
        expect({x[4] for x in s} == set(mutate.REVIEWER_OPERATORS), f"{f}: every reviewer operator has sites")
        expect(any(x[4] == "clear-drop" and "err_cnt_d   = err_cnt_q;" in mutate.apply(text, x).split("\n")[x[0]]
                   for x in s), f"{f}: the error window's clear of err_cnt_d is a clear-drop site")

if failures:
    for f in failures:
        print("FAIL:", f)
    sys.exit(1)
print(f"mutate.py reviewer operators: {len(mutate.reviewer_sites(FIXTURE))} fixture mutants, all as expected")
