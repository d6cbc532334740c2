#!/usr/bin/env python3
"""Mutation score of the RTL verification (docs/coverage.md, "Mutation").

Generates source-level mutants of the controller (rtl/ocs), link-layer (rtl/link), IPbus transactor
(rtl/ipbus) and board top (rtl/board) RTL: swapped comparisons and logic operators, inverted
conditions, off-by-one constants, stuck bits. Each mutant is verilated into the models its group's
testbench uses (the shrunk controller, the link endpoint, the transactor, the board top),
linked against the already-built testbench objects of an ordinary build, and run under a time
budget; with --formal, the formal proofs (`make -f Makefile.verilator formal`) run against it too.
A mutant is killed when a run fails, survives when all pass, and is stillborn when it does not
build. Reports per module, with every survivor's diff, as JSON and Markdown.

    tools/mutate.py --build build --count 100 --out out/mutate

With --exhaustive it runs every site of the chosen operators instead of a sample: by default the
reviewer's operators (issue 43: a clear removed, a condition's term dropped, a comparison's edge
moved, a parameter's use doubled or halved, a branch's next state or reason taken from a sibling
branch), which a random sample of the whole list rarely draws; --operators picks operators or the
groups `classic` and `reviewer`, --sample N a fixed, evenly spaced sample of the exhaustive list,
--resume REPORT goes on with a run that stopped half way.

    tools/mutate.py --build build --groups link,ocs,ipbus,board --exhaustive --jobs 2 --out out/mutate-all

The build directory must hold the ordinary build's rtl_ocs_tests and rtl_tests.
"""
import argparse
import difflib
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Which models a mutated file is rebuilt into, and which testbench runs them. Each model: its
# Verilator command in the build (model_dir), and the library of the test's link line whose copy
# of the model the mutant's replaces (`archive`); `only`: rebuilt only for mutants of these files.
GROUPS = {
    "ocs": {
        "files": ["rtl/ocs/ocs_axil_slave.sv", "rtl/ocs/ocs_event_log.sv", "rtl/ocs/ocs_sequencer.sv",
                  "rtl/ocs/ocs_link_map.sv", "rtl/ocs/ocs_controller.sv"],
        # The shrunk model runs the directed tests; the default one the tests at the board's own
        # parameters (a parameter's use halved or doubled often shows only there).
        "models": [{"model_dir": "rtl/CMakeFiles/mxtb_rtl_ocs_small.dir/Vocs_ctl_small.dir",
                    "prefix": "Vocs_ctl_small", "archive": "../../rtl/libmxtb_rtl_ocs_small.a"},
                   {"model_dir": "rtl/CMakeFiles/mxtb_rtl_ocs.dir/Vocs_controller.dir",
                    "prefix": "Vocs_controller", "archive": "../../rtl/libmxtb_rtl_ocs.a"}],
        "test_dir": "testbench/rtl",
        "test": "rtl_ocs_tests",
        "formal_groups": {"rtl/ocs/ocs_axil_slave.sv": ["ocs_axil"], "rtl/ocs/ocs_event_log.sv": ["ocs_log_small", "ocs_log_odd"],
                          "rtl/ocs/ocs_sequencer.sv": ["ocs_ctl_reset", "ocs_seq_small"],
                          "rtl/ocs/ocs_link_map.sv": ["ocs_ctl_small"],
                          "rtl/ocs/ocs_controller.sv": ["ocs_ctl_reset", "ocs_ctl_small"]},
    },
    "link": {
        "files": ["rtl/link/link_block_lock.sv", "rtl/link/link_tx.sv", "rtl/link/link_rx.sv",
                  "rtl/link/link_train.sv", "rtl/link/link_endpoint.sv"],
        "models": [{"model_dir": "rtl/CMakeFiles/mxtb_rtl_link.dir/Vlink_endpoint.dir",
                    "prefix": "Vlink_endpoint", "archive": "../../rtl/libmxtb_rtl_link.a"},
                   {"model_dir": "rtl/CMakeFiles/mxtb_rtl_units.dir/Vlink_block_lock.dir",
                    "prefix": "Vlink_block_lock", "archive": "../../rtl/libmxtb_rtl_units.a",
                    "only": ["rtl/link/link_block_lock.sv"]}],
        "test_dir": "testbench/rtl",
        "test": "rtl_tests",
        # --formal: a mutant's own module's proofs alone (rtl/formal/formal.sh's groups)
        "formal_groups": {"rtl/link/link_train.sv": ["link_train_small"], "rtl/link/link_tx.sv": ["link_tx_small"],
                          "rtl/link/link_rx.sv": ["link_rx_small"], "rtl/link/link_block_lock.sv": ["link_lock_small"],
                          "rtl/link/link_endpoint.sv": ["link_pair_bmc"]},
    },
    # The IPbus transactor, killed by the differential fuzzing against the C++ target.
    "ipbus": {
        "files": ["rtl/ipbus/ipbus_transactor.sv"],
        # and the 3-buffer model, whose ring of kept replies does not wrap at a power of two
        "models": [{"model_dir": "rtl/CMakeFiles/mxtb_rtl_ipbus.dir/Vipbus_transactor.dir",
                    "prefix": "Vipbus_transactor", "archive": "../../rtl/libmxtb_rtl_ipbus.a"},
                   {"model_dir": "rtl/CMakeFiles/mxtb_rtl_ipbus_b3.dir/Vipbus_transactor_b3.dir",
                    "prefix": "Vipbus_transactor_b3", "archive": "../../rtl/libmxtb_rtl_ipbus_b3.a"}],
        "test_dir": "testbench/protocol",
        "test": "ipbus_rtl_diff_tests",
        # ipbus_small: the transactor as the emulator has it; board_bus_board: as a board has it
        # (EMU_WINDOW 0), which no test model is
        "formal_groups": {"rtl/ipbus/ipbus_transactor.sv": ["ipbus_small", "board_bus_board"]},
    },
    # The board top's own RTL: its decoder and block RAM (board_bus), the firmware's arbiter and
    # the top, killed by rtl_board's datagrams into the (shrunk) top.
    "board": {
        "files": ["rtl/board/board_bus.sv", "rtl/board/board_ram.sv", "rtl/board/axil_arbiter.sv",
                  "rtl/board/mxtb_board.sv"],
        "models": [{"model_dir": "rtl/CMakeFiles/mxtb_rtl_board_small.dir/Vmxtb_board_small.dir",
                    "prefix": "Vmxtb_board_small", "archive": "../../rtl/libmxtb_rtl_board_small.a"}],
        "test_dir": "testbench/rtl",
        "test": "rtl_board_tests",
        # --formal: a mutant's own module's proofs alone (rtl/formal/formal.sh's groups)
        "formal_groups": {"rtl/board/board_bus.sv": ["board_bus_small", "board_bus_board"], "rtl/board/board_ram.sv": ["board_ram_small"],
                          "rtl/board/axil_arbiter.sv": ["board_arbiter"],
                          # the top's wiring has no proof of its own: rtl_board's tests alone
                          "rtl/board/mxtb_board.sv": []},
    },
}


class UsageError(Exception):
    pass


# ---------------------------------------------------------------- mutation sites

DECL = re.compile(r"^\s*(input|output|inout|logic|wire|reg|bit|int|integer|localparam|parameter|typedef|"
                  r"module|import|function|automatic|genvar|`include|`define|`ifn?def|`else|`endif)\b")
SIZED = re.compile(r"\b(\d+)'([dhb])([0-9a-fA-F_]+)\b")
# A statement `x <= value;` (after a line start, begin, else, a condition's `)` or a case label's
# `:`), not a comparison inside parentheses.
NBA = re.compile(r"(?:^|\bbegin\b|\belse\b|\)|:)\s*([A-Za-z_][\w.]*(?:\[[^\]]*\])*)\s*<=\s*([^;]+);")
PLAIN_INT = re.compile(r"(?<![\w'.$])(\d+)(?![\w'.])")


def code_lines(text):
    """Yields (index, code) for each line: comments blanked, lines in assertion-only code skipped."""
    in_block = False
    skip_depth = 0  # inside `ifdef MXTB_ASSERT_ON / FORMAL: checking code, not design
    depth_stack = []
    check_parens = 0  # open parentheses of an assertion macro continued on the next lines
    for i, raw in enumerate(text.split("\n")):
        line = raw
        out = []
        j = 0
        while j < len(line):
            if in_block:
                end = line.find("*/", j)
                if end < 0:
                    out.append(" " * (len(line) - j))
                    j = len(line)
                else:
                    out.append(" " * (end + 2 - j))
                    j = end + 2
                    in_block = False
            elif line.startswith("/*", j):
                in_block = True
            elif line.startswith("//", j):
                out.append(" " * (len(line) - j))
                j = len(line)
            elif line[j] == '"':
                end = line.find('"', j + 1)
                end = len(line) - 1 if end < 0 else end
                out.append(" " * (end + 1 - j))
                j = end + 1
            else:
                out.append(line[j])
                j += 1
        code = "".join(out)
        if check_parens:
            # A continuation line of a multi-line `ASSERT(...)`: checking code too.
            check_parens = max(0, check_parens + code.count("(") - code.count(")"))
            continue
        s = code.strip()
        m = re.match(r"`(ifdef|ifndef)\s+(\w+)", s)
        if m:
            checking = m.group(1) == "ifdef" and m.group(2) in ("MXTB_ASSERT_ON", "FORMAL")
            depth_stack.append(checking)
            skip_depth += checking
            continue
        if s.startswith("`endif") and depth_stack:
            skip_depth -= depth_stack.pop()
            continue
        if s.startswith("`else") and depth_stack:
            was = depth_stack.pop()
            skip_depth -= was
            depth_stack.append(False)
            continue
        check = re.search(r"`(ASSERT|ASSUME|COVER)\w*|\b(assert|assume|cover)\b", code)
        if check and not skip_depth:
            rest = code[check.start():]
            check_parens = max(0, rest.count("(") - rest.count(")"))
        if skip_depth or not s or DECL.match(code) or check:
            continue
        yield i, code


def matching_paren(code, open_at):
    depth = 0
    for k in range(open_at, len(code)):
        if code[k] == "(":
            depth += 1
        elif code[k] == ")":
            depth -= 1
            if depth == 0:
                return k
    return -1


def sites(text):
    """Every mutation of one file: (line, start, end, replacement, operator)."""
    out = []
    for i, code in code_lines(text):
        def add(start, end, repl, op):
            out.append((i, start, end, repl, op))

        for m in re.finditer(r"==|!=", code):
            if code[m.start() - 1:m.start()] in "=!<>" and m.start() > 0:
                continue
            if code[m.end():m.end() + 1] == "=":
                continue
            add(m.start(), m.end(), "!=" if m.group() == "==" else "==", "eq-swap")
        for m in re.finditer(r"(?<![<>=!-])([<>])(?![<>=])", code):
            op = m.group(1)
            if op == ">" and code[m.start() - 1:m.start()] in ("-", "="):
                continue
            if op == "<" and code[m.start() - 1:m.start()] == "<":
                continue
            add(m.start(), m.end(), op + "=", "rel-widen")
        for m in re.finditer(r"(?<![<>=!])>=", code):
            add(m.start(), m.end(), ">", "rel-narrow")
        for m in re.finditer(r"&&|\|\|", code):
            add(m.start(), m.end(), "||" if m.group() == "&&" else "&&", "logic-swap")
        for m in re.finditer(r"(?<=[\w)\]] )([+-])(?= [\w(])", code):
            add(m.start(), m.end(), "-" if m.group(1) == "+" else "+", "arith-swap")
        for m in re.finditer(r"(?<=[\w)\]] )([&|^])(?= [\w(~])", code):
            add(m.start(), m.end(), {"&": "|", "|": "&", "^": "&"}[m.group(1)], "bit-swap")
        for m in re.finditer(r"\b(if|while)\s*\(", code):
            o = m.end() - 1
            c = matching_paren(code, o)
            if c > 0:
                add(o, c + 1, "(!" + code[o:c + 1] + ")", "cond-invert")
        for m in re.finditer(r"!(?!=)(?=[\w(])", code):
            add(m.start(), m.end(), "", "not-drop")
        for m in SIZED.finditer(code):
            width, base, digits = int(m.group(1)), m.group(2), m.group(3).replace("_", "")
            try:
                v = int(digits, {"d": 10, "h": 16, "b": 2}[base])
            except ValueError:
                continue
            top = (1 << width) - 1 if width < 64 else None
            fmt = {"d": "{}'d{}", "h": "{}'h{:x}", "b": "{}'b{:b}"}[base]
            if width == 1:
                add(m.start(), m.end(), fmt.format(1, 1 - v), "stuck-bit")
                continue
            if top is None or v + 1 <= top:
                add(m.start(), m.end(), fmt.format(width, v + 1), "const-inc")
            if v > 0:
                add(m.start(), m.end(), fmt.format(width, v - 1), "const-dec")
        for m in NBA.finditer(code):
            # A nonblocking assignment's value stuck at zero.
            rhs = m.group(2).strip()
            if not re.fullmatch(r"(\d*'[dhb]?)?0+|'0", rhs):  # already zero: no mutant
                add(m.start(2), m.start(2) + len(m.group(2).rstrip()), "'0", "stuck-zero")
        for m in PLAIN_INT.finditer(code):
            if "[" in code[:m.start()] and "]" in code[m.end():] and code[:m.start()].rfind("[") > code[:m.start()].rfind("]"):
                continue  # a bit select or width
            if re.search(r"#\s*\($", code[:m.start()].rstrip()) or "'" in code[max(0, m.start() - 1):m.start()]:
                continue
            v = int(m.group(1))
            add(m.start(), m.end(), str(v + 1), "const-inc")
            if v > 0:
                add(m.start(), m.end(), str(v - 1), "const-dec")
    return out


# ---------------------------------------------------------------- the reviewer's operators
# The mutants a reviewer writes by hand against a documented rule (issue 43), run on every site
# they match (--exhaustive) rather than drawn: each targets where a rule's terms are computed
# (a counter and what clears it, a window and its edges, a flag and its reset, a threshold).

REVIEWER_OPERATORS = ("clear-drop", "term-drop", "edge-move", "param-scale", "branch-swap")
# A statement's left-hand side and right-hand side: `x = v;`, `x <= v;` (after a line start,
# begin, else, a condition's `)`, a case label's `:` or another statement's `;`).
STMT = re.compile(r"(?:^|\bbegin\b|\belse\b|\)|:|;)\s*(?:assign\s+)?([A-Za-z_][\w.]*(?:\[[^\]]*\])*)\s*(<=|=)(?!=)\s*([^;]+);")
ZERO = re.compile(r"(\d*'[dhb]?)?0+|'0|\d+'[dhb]0+")
CONST_NAME = re.compile(r"(?:\w+::)?[A-Z]\w*")


def _norm_value(v):
    v = v.strip().replace("_", "")
    m = re.fullmatch(r"(\d*)'([dhb])([0-9a-fA-F]+)", v)
    if m:
        return str(int(m.group(3), {"d": 10, "h": 16, "b": 2}[m.group(2)]))
    if v in ("'0",) or re.fullmatch(r"\d+", v):
        return str(int(v.strip("'")))
    return v


def _base(lhs):
    return re.match(r"[A-Za-z_][\w.]*", lhs).group(0)


def _old_value(lhs, regs):
    """What a register's next value keeps when its clear is removed: x_q for x_d, x_q itself."""
    base = _base(lhs)
    if base.endswith("_d") and base[:-2] + "_q" in regs:
        return base[:-2] + "_q" + lhs[len(base):]
    if base in regs:
        return lhs
    return None


def _split_terms(code, lo, hi):
    """Top-level && / || terms of code[lo:hi] as (start, end) spans, with the operators between."""
    depth, terms, ops, start, k = 0, [], [], lo, lo
    while k < hi:
        c = code[k]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and c in "?,":
            return None, None  # a ternary or a list: not one condition
        elif depth == 0 and code[k:k + 2] in ("&&", "||"):
            terms.append((start, k))
            ops.append((k, k + 2))
            start = k + 2
            k += 2
            continue
        k += 1
    terms.append((start, hi))
    return terms, ops


def _term_drops(code, lo, hi, add):
    """One term dropped from the condition code[lo:hi] and from each parenthesised group in it."""
    spans = [(lo, hi)]
    k = lo
    while k < hi:
        if code[k] == "(":
            c = matching_paren(code, k)
            if c < 0 or c > hi:
                break
            spans.append((k + 1, c))
        k += 1
    for a, b in spans:
        terms, ops = _split_terms(code, a, b)
        if not terms or len(terms) < 2:
            continue
        for t, (ts, te) in enumerate(terms):
            # The term and the operator joining it to its neighbour (the next one; the last term's previous).
            if t < len(ops):
                s, e = ts, terms[t + 1][0]
            else:
                s, e = ops[t - 1][0], te
            add(s, e, "", "term-drop")


def reviewer_sites(text):
    """Every reviewer mutant of one file: (line, start, end, replacement, operator)."""
    lines = list(code_lines(text))
    out = []
    params = set(re.findall(r"\bparameter\s+(?:int\s+|logic\s*(?:\[[^\]]*\])?\s*)?(\w+)\s*=", text))
    regs = set(re.findall(r"\b(\w+_q)\b", text))
    # Reset values: the registers' assignments under `if (!rst_ni)` (each always block's reset branch).
    reset_val = {}
    raw = text.split("\n")
    in_reset = None
    for i, line in enumerate(raw):
        code = line.split("//")[0]
        if in_reset is None and re.search(r"\bif\s*\(\s*!\s*rst_n\w*\s*\)", code):
            in_reset = 0 if re.search(r"\bbegin\b", code) else -1
            if in_reset == -1:
                for m in re.finditer(r"([A-Za-z_]\w*)\s*<=\s*([^;]+);", code):
                    reset_val.setdefault(m.group(1), _norm_value(m.group(2)))
                in_reset = None
            continue
        if in_reset is not None:
            in_reset += len(re.findall(r"\bbegin\b", code)) - len(re.findall(r"\bend\b", code))
            for m in re.finditer(r"([A-Za-z_]\w*)\s*<=\s*([^;]+);", code):
                reset_val.setdefault(m.group(1), _norm_value(m.group(2)))
            if in_reset < 0:
                in_reset = None
    # Which lines sit in a reset branch, and which always block each line is in.
    reset_lines, block_of = set(), {}
    in_reset, block = None, 0
    for i, code in lines:
        if re.search(r"\balways(_ff|_comb|_latch)?\b", code):
            block += 1
        block_of[i] = block
        if in_reset is None and re.search(r"\bif\s*\(\s*!\s*rst_n\w*\s*\)", code):
            reset_lines.add(i)
            in_reset = 0 if re.search(r"\bbegin\b", code) else None
            continue
        if in_reset is not None:
            reset_lines.add(i)
            in_reset += len(re.findall(r"\bbegin\b", code)) - len(re.findall(r"\bend\b", code))
            if in_reset <= 0 and re.search(r"\bend\b", code):
                in_reset = None
    # branch-swap: constant values assigned to one variable in one always block, in source order.
    named = {}
    for i, code in lines:
        if i in reset_lines:
            continue
        for m in STMT.finditer(code):
            lhs, rhs = m.group(1), m.group(3).strip()
            if CONST_NAME.fullmatch(rhs) and rhs not in params:
                named.setdefault((block_of[i], _base(lhs)), []).append((i, m.start(3), m.start(3) + len(m.group(3).rstrip()), rhs))

    for i, code in lines:
        def add(start, end, repl, op):
            out.append((i, start, end, repl, op))

        # clear-drop: a register's clear (zero or its reset value), outside reset, keeps the old value.
        if i not in reset_lines:
            for m in STMT.finditer(code):
                lhs, rhs = m.group(1), m.group(3).strip()
                old = _old_value(lhs, regs)
                if old is None or old == rhs:
                    continue
                base = _base(lhs)
                reg = base[:-2] + "_q" if base.endswith("_d") else base
                rv = reset_val.get(reg)
                if ZERO.fullmatch(rhs.replace("_", "")) or (rv is not None and _norm_value(rhs) == rv):
                    add(m.start(3), m.start(3) + len(m.group(3).rstrip()), old, "clear-drop")
                else:
                    # A clear in one arm of a ternary: `x_d = c ? '0 : ...`.
                    for z in re.finditer(r"(?<=[?:])\s*((\d+'[dhb])?0+|'0)\s*(?=[:;]|$)", m.group(3)):
                        s = m.start(3) + z.start(1)
                        add(s, s + len(z.group(1)), old, "clear-drop")
        # term-drop: one term of a condition that guards a state change, a step or an output.
        for m in re.finditer(r"\b(if|while)\s*\(", code):
            o = m.end() - 1
            c = matching_paren(code, o)
            if c > 0:
                _term_drops(code, o + 1, c, add)
        for m in STMT.finditer(code):
            if i in reset_lines:
                continue
            s3, rhs = m.start(3), m.group(3)
            # Up to a top-level `?`: the ternary's condition.
            depth, end = 0, len(rhs.rstrip())
            for k, ch in enumerate(rhs):
                if ch in "([{":
                    depth += 1
                elif ch in ")]}":
                    depth -= 1
                elif ch == "?" and depth == 0:
                    end = k
                    break
            _term_drops(code, s3, s3 + end, add)
        # edge-move: a comparison's edge (< and <=, > and >=; == to >=).
        nba = set()
        for m in STMT.finditer(code):
            if m.group(2) == "<=":
                nba.add(code.index("<=", m.end(1)))
        for m in re.finditer(r"(?<![<>=!])(<=|>=|<|>|==)(?![<>=])", code):
            op, s = m.group(1), m.start()
            if op == "<=" and s in nba:
                continue
            if op in ("<", ">") and (code[s - 1:s] in ("-", "=") or code[s + 1:s + 2] in ("<", ">")):
                continue
            if op == "<" and code[s - 1:s] == "<":
                continue
            new = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": ">="}[op]
            add(s, m.end(), new, "edge-move")
        # param-scale: a parameter's use doubled and halved.
        for p in params:
            for m in re.finditer(r"(?<![\w.'])" + re.escape(p) + r"(?!\w)", code):
                if code[m.end():m.end() + 1] == "(" or code[max(0, m.start() - 1):m.start()] == ".":
                    continue  # a port or parameter name in an instance (.P(...))
                add(m.start(), m.end(), f"({p} * 2)", "param-scale")
                add(m.start(), m.end(), f"({p} / 2)", "param-scale")
    # branch-swap: an assignment takes the value of the nearest sibling before or after it (the
    # other assignments of a named constant to the same variable in the same block).
    for (blk, var), assigns in named.items():
        for k, (i, s, e, rhs) in enumerate(assigns):
            seen = set()
            for j in (k - 1, k + 1):
                if 0 <= j < len(assigns) and assigns[j][3] != rhs and assigns[j][3] not in seen:
                    seen.add(assigns[j][3])
                    out.append((i, s, e, assigns[j][3], "branch-swap"))
    # One mutant per distinct edit.
    uniq, keys = [], set()
    for site in out:
        key = site[:4]
        if key not in keys:
            keys.add(key)
            uniq.append(site)
    return uniq


CLASSIC_OPERATORS = ("eq-swap", "rel-widen", "rel-narrow", "logic-swap", "arith-swap", "bit-swap", "cond-invert",
                     "not-drop", "stuck-bit", "const-inc", "const-dec", "stuck-zero")


def all_sites(text, operators=None):
    """The classic operators' sites, then the reviewer's; with `operators`, only those. An edit two
    operators both make is one mutant (the first operator's)."""
    out, keys = [], set()
    for site in sites(text) + reviewer_sites(text):
        if operators is not None and site[4] not in operators:
            continue
        if site[:4] not in keys:
            keys.add(site[:4])
            out.append(site)
    return out


def parse_operators(spec):
    """--operators: names, `classic` or `reviewer` (the groups), comma-separated."""
    ops = []
    for w in [w for w in spec.split(",") if w]:
        if w == "classic":
            ops += CLASSIC_OPERATORS
        elif w == "reviewer":
            ops += REVIEWER_OPERATORS
        elif w in CLASSIC_OPERATORS or w in REVIEWER_OPERATORS:
            ops.append(w)
        else:
            raise UsageError(f"--operators: unknown operator '{w}' (classic: {', '.join(CLASSIC_OPERATORS)}; "
                             f"reviewer: {', '.join(REVIEWER_OPERATORS)})")
    return tuple(dict.fromkeys(ops))


def norm(line):
    return " ".join(line.split())


def read_equivalents(path):
    """The reviewed list of equivalent mutants: paragraphs of `file:`, `from:` (the original line),
    `to:` (the mutated line) and `why:` (the argument, continued on indented lines), and where the
    same line occurs at several sites of which not all are equivalent, `after:` (a line among the
    three before the mutated one, which tells the site from the others). Lines are compared with runs of blanks folded, so the entries survive
    re-indentation and moved lines. Every entry must still name a mutant the sites give: a stale
    entry is an error."""
    entries, cur, key = [], {}, None
    for n, raw in enumerate(Path(path).read_text().split("\n") + [""], 1):
        if raw.startswith("#"):
            continue
        if not raw.strip():
            if cur:
                entries.append(cur)
            cur, key = {}, None
            continue
        m = re.match(r"(file|from|to|after|why):\s?(.*)$", raw)
        if m:
            key = m.group(1)
            if key in cur:
                raise UsageError(f"{path}:{n}: '{key}:' twice in one entry")
            cur[key] = m.group(2).strip()
            cur.setdefault("at", n)
        elif key == "why" and raw[:1].isspace():
            cur["why"] += " " + raw.strip()
        else:
            raise UsageError(f"{path}:{n}: expected file:, from:, to:, after: or why:, got {raw.strip()!r}")
    texts = {}
    for e in entries:
        missing = [k for k in ("file", "from", "to", "why") if not e.get(k)]
        if missing:
            raise UsageError(f"{path}:{e['at']}: entry without {', '.join(missing)}")
        f = e["file"]
        if f not in texts:
            if not (ROOT / f).exists():
                raise UsageError(f"{path}:{e['at']}: no file {f}")
            texts[f] = (ROOT / f).read_text()
        text = texts[f]
        lines = text.split("\n")
        ok = any(norm(lines[site[0]]) == norm(e["from"]) and norm(apply(text, site).split("\n")[site[0]]) == norm(e["to"]) and
                 after_matches(e, lines[max(0, site[0] - 3):site[0]]) for site in all_sites(text))
        if not ok:
            raise UsageError(f"{path}:{e['at']}: no mutant of {f} turns {e['from']!r} into {e['to']!r} "
                             "(the RTL changed: review the entry)")
    return entries


def after_matches(entry, before):
    """An entry's `after:` line is among `before`, the lines above the mutant's (or it has none)."""
    return "after" not in entry or any(norm(b) == norm(entry["after"]) for b in before)


def equivalent_reason(entries, f, original, mutated, before):
    """The argument of the entry naming this mutant (`before`: the three lines above it), or None."""
    for e in entries:
        if e["file"] == f and norm(e["from"]) == norm(original) and norm(e["to"]) == norm(mutated) and after_matches(e, before):
            return e["why"]
    return None


def apply(text, site):
    lines = text.split("\n")
    i, start, end, repl, _ = site
    lines[i] = lines[i][:start] + repl + lines[i][end:]
    return "\n".join(lines)


# ---------------------------------------------------------------- building and running

def run(cmd, log, timeout=None, cwd=None, env=None):
    """Runs cmd (a list, or a string for the shell) appending to log; returns (rc, seconds, timed_out)."""
    t0 = time.monotonic()
    with open(log, "a") as f:
        f.write("$ " + (cmd if isinstance(cmd, str) else shlex.join(cmd)) + "\n")
        f.flush()
        try:
            p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd, env=env,
                                 shell=isinstance(cmd, str), start_new_session=True)
            rc = p.wait(timeout=timeout)
            return rc, time.monotonic() - t0, False
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait()
            return None, time.monotonic() - t0, True


def read_cmake_list(path):
    return Path(path).read_text().split(";")


class Group:
    def __init__(self, name, spec, build):
        self.name, self.spec, self.build = name, spec, build
        link_file = build / spec["test_dir"] / "CMakeFiles" / (spec["test"] + ".dir") / "link.txt"
        if not link_file.exists():
            raise UsageError(f"--build {build}: {link_file.relative_to(build)} is missing (build {spec['test']} there first)")
        self.link = link_file.read_text().strip()
        self.vargs = {}
        for m in spec["models"]:
            args_file = build / m["model_dir"] / "verilator_args.txt"
            if not args_file.exists():
                raise UsageError(f"--build {build}: {args_file.relative_to(build)} is missing (build {spec['test']} there first)")
            if m["archive"] not in self.link.split():
                raise UsageError(f"{link_file}: the link line has no {m['archive']}")
            self.vargs[m["prefix"]] = read_cmake_list(args_file)

    def snapshot(self, into):
        """Copies the testbench's objects and libraries, so that rebuilding the build folder while
        mutants run (a new test, say) changes nothing under them."""
        into.mkdir(parents=True, exist_ok=True)
        test_dir = self.build / self.spec["test_dir"]
        words = self.link.split()
        archives = {m["archive"] for m in self.spec["models"]}
        for k, w in enumerate(words):
            if (w.endswith(".o") or w.endswith(".a")) and not (k > 0 and words[k - 1] == "-o"):
                src = (test_dir / w).resolve()
                dst = into / f"{k:03d}-{src.name}"
                shutil.copy2(src, dst)
                words[k] = str(dst)
                if w in archives:
                    for m in self.spec["models"]:
                        if m["archive"] == w:
                            m["archive"] = str(dst)
        self.link = " ".join(words)

    def build_model(self, model, obj, mutated, log, opt):
        args = list(self.vargs[model["prefix"]])
        for i, a in enumerate(args):
            if a == "--Mdir":
                args[i + 1] = str(obj)
            if a == "--make":
                args[i + 1] = "gmake"
            for orig, mut in mutated.items():
                if a == str(ROOT / orig) or a == orig:
                    args[i] = str(mut)
        rc, _, _ = run(args, log)
        if rc != 0:
            return None
        cxx = "ccache g++" if shutil.which("ccache") else "g++"
        target = model["prefix"] + "__ALL.a"
        rc, _, _ = run(["make", "-s", "-C", str(obj), "-f", model["prefix"] + ".mk", f"CXX={cxx}",
                        f"OPT_FAST={opt}", f"OPT_SLOW={opt}", f"OPT_GLOBAL={opt}", target], log)
        return obj / target if rc == 0 else None

    def build_mutant(self, work, mutated, log, opt):
        """Verilates the models with `mutated` (repo path -> mutant file), compiles them and links
        the testbench. Returns the test program, or None when it does not build."""
        words = self.link.split()
        exe = work / self.spec["test"]
        replace = {}
        for model in self.spec["models"]:
            if "only" in model and not any(f in model["only"] for f in mutated):
                continue
            obj = work / ("obj-" + model["prefix"])
            obj.mkdir(parents=True, exist_ok=True)
            lib = self.build_model(model, obj, mutated, log, opt)
            if lib is None:
                return None
            replace[model["archive"]] = str(lib)
        new = []
        for k, w in enumerate(words):
            if w in replace:
                # Before the original archive: the linker takes the mutant's model from the first.
                new.append(replace[w])
            if k > 0 and words[k - 1] == "-o":
                w = str(exe)
            new.append(w)
        # The mutants' archives need the Verilator runtime from the other models' archives.
        first_lib = next(k for k, w in enumerate(new) if w.endswith(".a") or w.endswith(".so") or ".so." in w)
        new = new[:first_lib] + ["-Wl,--start-group"] + new[first_lib:] + ["-Wl,--end-group"]
        rc, _, _ = run(new, log, cwd=self.build / self.spec["test_dir"])
        return exe if rc == 0 else None


def has_formal(tree):
    r = subprocess.run(["make", "-n", "-f", "Makefile.verilator", "formal"], cwd=tree,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return r.returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build"), help="ordinary build directory (default build/)")
    ap.add_argument("--count", type=int, default=100, help="mutants to run (default 100)")
    ap.add_argument("--seed", type=int, default=1, help="which mutants are drawn (default 1)")
    ap.add_argument("--groups", default="ocs,link", help="comma-separated: ocs, link, ipbus, board (default ocs,link)")
    ap.add_argument("--files", default="", help="only mutate these files (comma-separated, repository paths)")
    ap.add_argument("--budget-s", type=float, default=120, help="test time per mutant before it counts as timed out")
    ap.add_argument("--jobs", type=int, default=1, help="mutants at a time (default 1)")
    ap.add_argument("--opt", default="-O0", help="compiler optimisation for the mutant models (default -O0)")
    ap.add_argument("--formal", action="store_true", help="also run `make -f Makefile.verilator formal` on each mutant")
    ap.add_argument("--rerun", default="", help="run again the survivors of an earlier JSON report (after adding tests)")
    ap.add_argument("--rescore", default="", help="score an earlier JSON report again with the current --equivalent "
                    "list, running nothing (its verdicts stay; reports go to --out)")
    ap.add_argument("--operators", default="", help="comma-separated operators, or the groups `classic` and "
                    "`reviewer` (default: classic; with --exhaustive: reviewer)")
    ap.add_argument("--exhaustive", action="store_true", help="run every site the operators match in the chosen "
                    "files, not a sample of --count (the reviewer's benchmark, docs/coverage.md)")
    ap.add_argument("--resume", default="", help="with --exhaustive: the JSON report of a run that stopped half way; "
                    "its mutants keep their verdicts, the rest run")
    ap.add_argument("--sample", type=int, default=0, help="with --exhaustive: only N of its mutants, evenly spaced "
                    "over the list in its order (a fixed sample: the suite's)")
    ap.add_argument("--list", action="store_true", help="print the number of sites per file (and operator) and stop")
    ap.add_argument("--out", default="out/mutate", help="output folder (default out/mutate)")
    ap.add_argument("--json", default="", help="JSON report (default OUT/mutate.json)")
    ap.add_argument("--markdown", default="", help="Markdown report (default OUT/mutate.md)")
    ap.add_argument("--min-score", type=float, default=None, help="exit 1 if the raw kill percentage is below this")
    ap.add_argument("--equivalent", default=str(ROOT / "tools" / "mutate_equivalent.txt"),
                    help="reviewed list of equivalent mutants (default tools/mutate_equivalent.txt; '' for none)")
    a = ap.parse_args()
    try:
        return run_mutation(a)
    except UsageError as e:
        print(f"mutate.py: error: {e}", file=sys.stderr)
        return 2


def run_mutation(a):
    if a.count < 1 or a.count > 100000:
        raise UsageError(f"--count must be in [1, 100000], got {a.count}")
    if a.jobs < 1 or a.jobs > 64:
        raise UsageError(f"--jobs must be in [1, 64], got {a.jobs}")
    if a.budget_s <= 0:
        raise UsageError(f"--budget-s must be positive, got {a.budget_s}")
    names = [g for g in a.groups.split(",") if g]
    for g in names:
        if g not in GROUPS:
            raise UsageError(f"--groups: unknown group '{g}' ({', '.join(GROUPS)})")
    build = Path(a.build).resolve()
    only = [f for f in a.files.split(",") if f]
    all_files = [f for g in names for f in GROUPS[g]["files"]]
    for f in only:
        if f not in all_files:
            raise UsageError(f"--files: {f} is not one of {', '.join(all_files)}")

    if a.resume and not a.exhaustive:
        raise UsageError("--resume needs --exhaustive")
    if a.sample < 0 or (a.sample and not a.exhaustive):
        raise UsageError("--sample needs --exhaustive and a positive count")
    operators = parse_operators(a.operators or ("reviewer" if a.exhaustive else "classic"))
    candidates = []
    per_file = {}
    per_op = {}
    for g in names:
        for f in GROUPS[g]["files"]:
            if only and f not in only:
                continue
            text = (ROOT / f).read_text()
            s = all_sites(text, operators)
            per_file[f] = len(s)
            for site in s:
                per_op.setdefault(f, {}).setdefault(site[4], 0)
                per_op[f][site[4]] += 1
            candidates += [(g, f, site) for site in s]
    equivalents = read_equivalents(a.equivalent) if a.equivalent else []
    if a.list:
        for f, n in per_file.items():
            ops = ", ".join(f"{o} {c}" for o, c in sorted(per_op.get(f, {}).items()))
            print(f"{n:5d}  {f}" + (f"  ({ops})" if ops else ""))
        totals = {}
        for f in per_op.values():
            for o, c in f.items():
                totals[o] = totals.get(o, 0) + c
        print(f"{sum(per_file.values()):5d}  in all  ({', '.join(f'{o} {c}' for o, c in sorted(totals.items()))})")
        if a.equivalent:
            print(f"{len(equivalents):5d}  listed equivalent in {a.equivalent}")
        return 0
    if a.rescore:
        return rescore(a, equivalents)
    if a.rerun:
        before = read_report("--rerun", a.rerun)
        chosen = []
        for r in before.get("mutants", []):
            if r.get("status") != "survived" or (only and r.get("file") not in only):
                continue
            check_site_unchanged("--rerun", a.rerun, r, "draw new mutants")
            chosen.append((r["group"], r["file"], tuple(r["site"])))
        names = sorted({g for g, _, _ in chosen}) or names
    elif a.exhaustive:
        # Every site, in file and line order; a sample takes every k-th, so it stays the same
        # mutants while the RTL's sites stay the same.
        chosen = candidates
        if a.sample and a.sample < len(chosen):
            step = len(chosen) / a.sample
            chosen = [chosen[int(k * step)] for k in range(a.sample)]
    else:
        rng = random.Random(a.seed)
        chosen = rng.sample(candidates, min(a.count, len(candidates)))
    # --resume: an exhaustive run stopped half way goes on where it stopped; the mutants its report
    # holds keep their verdicts and join this run's report.
    resumed = []
    if a.resume:
        done = {}
        for r in read_report("--resume", a.resume).get("mutants", []):
            check_site_unchanged("--resume", a.resume, r, "run it again whole")
            done[(r["file"], tuple(r["site"]))] = r
        resumed = [done[(f, s)] for _, f, s in chosen if (f, s) in done]
        apply_equivalents(resumed, equivalents)
        chosen = [(g, f, s) for g, f, s in chosen if (f, s) not in done]
        print(f"--resume: {len(resumed)} mutants done in {a.resume}, {len(chosen)} to run", flush=True)
    names = [g for g in names if any(cg == g for cg, _, _ in chosen)]
    groups = {g: Group(g, json.loads(json.dumps(GROUPS[g])), build) for g in names}
    out = Path(a.out).resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for g, grp in groups.items():
        grp.snapshot(out / "snapshot" / g)
    formal = a.formal and has_formal(ROOT)
    if a.formal and not formal:
        print("mutate.py: no formal target in Makefile.verilator here: tests only")

    # The pipeline on unmutated sources first: it must build and pass, and its time sets the budget.
    baseline = {}
    for g, grp in groups.items():
        work = out / f"baseline-{g}"
        log = work / "log.txt"
        work.mkdir()
        t0 = time.monotonic()
        exe = grp.build_mutant(work, {}, log, a.opt)
        build_s = time.monotonic() - t0
        if exe is None:
            raise UsageError(f"the unmutated {g} model does not build this way: {log}")
        rc, test_s, to = run([str(exe), "--abort-after=1"], log, timeout=a.budget_s)
        if rc != 0:
            raise UsageError(f"the unmutated {g} testbench fails ({'timed out' if to else f'exit {rc}'}): {log}")
        baseline[g] = {"build_s": round(build_s, 1), "test_s": round(test_s, 1)}
        print(f"baseline {g}: build {build_s:.1f} s, tests {test_s:.1f} s", flush=True)
        for o in work.glob("obj-*"):
            shutil.rmtree(o, ignore_errors=True)

    results = list(resumed)
    first_id = max((r["id"] for r in resumed), default=-1) + 1
    planned = len(chosen) + len(resumed)
    t_start = time.monotonic()

    def one(k, g, f, site):
        grp = groups[g]
        work = out / f"m{k:04d}"
        work.mkdir()
        text = (ROOT / f).read_text()
        mutant = apply(text, site)
        mfile = work / Path(f).name
        mfile.write_text(mutant)
        diff = "".join(difflib.unified_diff(text.splitlines(True), mutant.splitlines(True), f"a/{f}", f"b/{f}", n=1))
        (work / "mutant.diff").write_text(diff)
        log = work / "log.txt"
        r = {"id": k, "group": g, "file": f, "module": Path(f).stem, "line": site[0] + 1, "operator": site[4],
             "diff": diff, "site": list(site), "original": text.split("\n")[site[0]]}
        why = equivalent_reason(equivalents, f, r["original"], mutant.split("\n")[site[0]],
                                mutant.split("\n")[max(0, site[0] - 3):site[0]])
        t0 = time.monotonic()
        exe = grp.build_mutant(work, {f: mfile}, log, a.opt)
        r["build_s"] = round(time.monotonic() - t0, 1)
        if exe is None:
            r["status"] = "stillborn"
        else:
            # Time budget: the baseline's time several times over, at least --budget-s.
            budget = max(a.budget_s, 5 * baseline[g]["test_s"])
            rc, s, to = run([str(exe), "--abort-after=1"], log, timeout=budget)
            r["test_s"] = round(s, 1)
            r["status"] = "timed_out" if to else ("killed" if rc != 0 else "survived")
            r["killed_by"] = "tests" if rc not in (0, None) else None
            only = grp.spec.get("formal_groups", {}).get(f)
            if r["status"] == "survived" and formal and only != []:  # []: no proof of its own
                tree = work / "tree"
                shutil.copytree(ROOT / "rtl", tree / "rtl")
                shutil.copy(ROOT / "Makefile.verilator", tree / "Makefile.verilator")
                for extra in ("tools", "protocol"):
                    if (ROOT / extra).exists():
                        os.symlink(ROOT / extra, tree / extra)
                (tree / f).write_text(mutant)
                rc2, s2, to2 = run(["make", "-s", "-f", "Makefile.verilator", "formal", f"OUT={work / 'formal'}"] +
                                   ([f"GROUPS={' '.join(only)}"] if only else []), log, timeout=budget * 4, cwd=tree)
                r["formal_s"] = round(s2, 1)
                if to2:
                    # A proof that did not finish shows nothing against the mutant: a survivor.
                    r["formal_timed_out"] = True
                elif rc2 != 0:
                    r["status"] = "killed"
                    r["killed_by"] = "formal"
                shutil.rmtree(tree, ignore_errors=True)
            for o in work.glob("obj-*"):
                shutil.rmtree(o, ignore_errors=True)
            exe.unlink(missing_ok=True)
        if why is not None:
            # Listed equivalent: a survivor is left out of the second score; a detected one means
            # the list is wrong, and it counts as detected.
            if r["status"] == "survived":
                r["equivalent"] = why
            elif r["status"] in ("killed", "timed_out"):
                r["listed_equivalent_but_detected"] = why
        r["seconds"] = round(time.monotonic() - t0, 1)
        return r

    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = [pool.submit(one, first_id + k, g, f, site) for k, (g, f, site) in enumerate(chosen)]
        for n, fut in enumerate(futures):
            r = fut.result()
            results.append(r)
            note = " (listed equivalent)" if "equivalent" in r else ""
            if "listed_equivalent_but_detected" in r:
                note = " (WARNING: listed equivalent, yet detected: review the entry)"
            print(f"[{n + 1}/{len(chosen)}] {r['status']:<9} {r['file']}:{r['line']} {r['operator']} "
                  f"({r['seconds']:.0f} s){note}", flush=True)
            write_reports(a, out, results, baseline, formal, time.monotonic() - t_start, planned)
    summary = write_reports(a, out, results, baseline, formal, time.monotonic() - t_start, planned)
    print(summary["text"])
    if a.min_score is not None and summary["score_pct"] < a.min_score:
        print(f"FAIL: mutation score {summary['score_pct']:.1f}% below --min-score {a.min_score}")
        return 1
    return 0


def read_report(option, path):
    """An earlier run's JSON report, named by `option` (--rerun, --resume, --rescore)."""
    try:
        report = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise UsageError(f"{option} {path}: {e}")
    # Reports before 2026-12-06 counted a proof that timed out as a kill; it shows nothing.
    for r in report.get("mutants", []):
        if r.get("killed_by") == "formal (timed out)":
            r.update(status="survived", killed_by=None, formal_timed_out=True)
    return report


def check_site_unchanged(option, path, r, advice):
    """A reported mutant's line must read as it did when it ran, or its site means another line."""
    if "site" not in r:
        raise UsageError(f"{option} {path}: mutant {r.get('id')} has no site (an older report)")
    if (ROOT / r["file"]).read_text().split("\n")[r["site"][0]] != r["original"]:
        raise UsageError(f"{option}: {r['file']}:{r['line']} changed since that run; {advice}")


def apply_equivalents(results, equivalents):
    """Earlier verdicts marked again with the current list of equivalent mutants."""
    for r in results:
        r.pop("equivalent", None)
        r.pop("listed_equivalent_but_detected", None)
        _, start, end, repl, _ = r["site"]
        mutated = r["original"][:start] + repl + r["original"][end:]
        lines = (ROOT / r["file"]).read_text().split("\n")
        why = equivalent_reason(equivalents, r["file"], r["original"], mutated, lines[max(0, r["site"][0] - 3):r["site"][0]])
        if why is not None and r["status"] == "survived":
            r["equivalent"] = why
        elif why is not None and r["status"] in ("killed", "timed_out"):
            r["listed_equivalent_but_detected"] = why


def rescore(a, equivalents):
    """An earlier run's verdicts with the current list of equivalent mutants applied."""
    before = read_report("--rescore", a.rescore)
    results = before.get("mutants", [])
    for r in results:
        if "site" not in r:
            raise UsageError(f"--rescore {a.rescore}: mutant {r.get('id')} has no site (an older report)")
    apply_equivalents(results, equivalents)
    for k in ("seed", "opt", "budget_s"):
        if k in before:
            setattr(a, k, before[k])
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    a.rerun = before.get("rerun", "")
    summary = write_reports(a, out, results, before.get("baseline", {}), before.get("formal", False),
                            before.get("wall_s", 0.0), before.get("planned", len(results)))
    print(summary["text"])
    return 0


def write_reports(a, out, results, baseline, formal, wall, planned):
    per = {}
    for r in results:
        m = per.setdefault(r["module"], {"killed": 0, "survived": 0, "timed_out": 0, "stillborn": 0, "equivalent": 0})
        m[r["status"]] += 1
        m["equivalent"] += "equivalent" in r
    tot = {k: sum(m[k] for m in per.values()) for k in ("killed", "survived", "timed_out", "stillborn", "equivalent")}
    valid = tot["killed"] + tot["survived"] + tot["timed_out"]
    detected = tot["killed"] + tot["timed_out"]
    # A timed-out mutant is detected (the design hangs where it must not) but listed apart.
    score = 100.0 * detected / valid if valid else 0.0
    # The usual mutation score leaves out the mutants shown equivalent (tools/mutate_equivalent.txt).
    distinct = valid - tot["equivalent"]
    score_ne = 100.0 * detected / distinct if distinct else 0.0
    survivors = [r for r in results if r["status"] == "survived" and "equivalent" not in r]
    equivalent = [r for r in results if "equivalent" in r]
    per_op = {}
    for r in results:
        m = per_op.setdefault(r["operator"], {"killed": 0, "survived": 0, "timed_out": 0, "stillborn": 0, "equivalent": 0})
        m[r["status"]] += 1
        m["equivalent"] += "equivalent" in r
    data = {"count": len(results), "planned": planned, "seed": a.seed, "exhaustive": getattr(a, "exhaustive", False),
            "operators": getattr(a, "operators", ""), "per_operator": per_op, "opt": a.opt, "formal": formal,
            "rerun": a.rerun, "budget_s": a.budget_s, "wall_s": round(wall, 1), "baseline": baseline, "totals": tot,
            "valid": valid, "score_pct": round(score, 1), "non_equivalent": distinct,
            "score_non_equivalent_pct": round(score_ne, 1), "per_module": per, "mutants": results}
    # Through a temporary file: the reports are rewritten after every mutant and may be read meanwhile.
    jpath = Path(a.json or out / "mutate.json")
    jpath.with_suffix(".tmp").write_text(json.dumps(data, indent=2) + "\n")
    jpath.with_suffix(".tmp").replace(jpath)
    drawn = (f"the survivors of {Path(a.rerun).name} again" if a.rerun else
             f"every site of {getattr(a, 'operators', '') or 'the reviewer operators'}" +
             (f" (a fixed sample of {a.sample})" if getattr(a, "sample", 0) else "") if getattr(a, "exhaustive", False)
             else f"seed {a.seed}")
    md = [f"# Mutation run: {len(results)} of {planned} mutants, {drawn}", "",
          f"Score: {tot['killed'] + tot['timed_out']} of {valid} valid mutants detected = **{score:.1f}%** "
          f"(killed {tot['killed']}, timed out {tot['timed_out']}, survived {tot['survived']}; "
          f"{tot['stillborn']} did not build). Tests{' and formal proofs' if formal else ''}; "
          f"models at {a.opt}; wall {wall / 60:.1f} min.", "",
          f"Over the mutants not listed equivalent ({tot['equivalent']} survivors are, in "
          f"{Path(a.equivalent).name if a.equivalent else 'no list'}): {detected} of {distinct} = "
          f"**{score_ne:.1f}%**.", "",
          "| module | killed | timed out | survived | of which equivalent | stillborn |", "|---|---|---|---|---|---|"]
    for mod in sorted(per):
        m = per[mod]
        md.append(f"| {mod} | {m['killed']} | {m['timed_out']} | {m['survived']} | {m['equivalent']} | {m['stillborn']} |")
    md += ["", "| operator | killed | timed out | survived | of which equivalent | stillborn |", "|---|---|---|---|---|---|"]
    for op in sorted(per_op):
        m = per_op[op]
        md.append(f"| {op} | {m['killed']} | {m['timed_out']} | {m['survived']} | {m['equivalent']} | {m['stillborn']} |")
    table_end = len(md)
    wrong = [r for r in results if "listed_equivalent_but_detected" in r]
    if wrong:
        md += ["", "## Listed equivalent, yet detected (the list is wrong there)", ""]
        md += [f"- {r['file']}:{r['line']} ({r['operator']}), {r['status']}" for r in wrong]
    md += ["", "## Survivors", ""]
    if not survivors:
        md.append("None.")
    for r in survivors:
        timed = ", its proof timed out" if r.get("formal_timed_out") else ""
        md += [f"### {r['file']}:{r['line']} ({r['operator']}{timed})", "", "```diff", r["diff"].rstrip(), "```", ""]
    md += ["", "## Equivalent survivors", ""]
    if not equivalent:
        md.append("None.")
    for r in equivalent:
        md += [f"### {r['file']}:{r['line']} ({r['operator']})", "", r["equivalent"], "", "```diff",
               r["diff"].rstrip(), "```", ""]
    Path(a.markdown or out / "mutate.md").write_text("\n".join(md) + "\n")
    text = "\n".join(md[:table_end])
    return {"score_pct": score, "text": text}


if __name__ == "__main__":
    sys.exit(main())
