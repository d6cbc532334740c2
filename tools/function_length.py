#!/usr/bin/env python3
"""Functions longer than a limit in C++ sources, unless a reason stands beside them.

    tools/function_length.py [--max-lines N] [--list] DIR...

A function (a free function, a member function, a constructor; the lambdas inside it count as its
lines) longer than N lines (default 100) must carry its reason in the comment just above its first
line, as a line that starts with `// Long:`, e.g.

    // Long: the reference engine's clock as first written, the thing the fast engine is checked against.
    void ReferenceEngine::one_cycle(...) {

Exits 1 naming every function over the limit without one (file:line, name, lines), 0 otherwise.
--list prints every function over the limit, reason or not. The parser is a brace matcher over the
source with comments and literals blanked: it knows namespaces, classes and constructors'
initializer lists, which is all that the project's code needs (testbench/tools checks it).
"""
import argparse
import os
import re
import sys

REASON = re.compile(r"^\s*//\s*Long:\s*\S")


def blank_comments_and_literals(text):
    """The text with comments, string and character literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    # Preprocessor lines (with their continuations) are not declarations either.
    return re.sub(r"(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), "".join(out))


def functions(text):
    """Yields (first line, last line, name) of every function definition, 1-based lines."""
    code = blank_comments_and_literals(text)
    line_of = [0] * (len(code) + 1)
    line = 1
    for k, ch in enumerate(code):
        line_of[k] = line
        if ch == "\n":
            line += 1
    line_of[len(code)] = line
    stack = []  # (kind, start offset, name)
    seg_start = 0  # where the current declaration began (after the last ; { } at this level)
    for k, ch in enumerate(code):
        if ch == ";" and (not stack or stack[-1][0] in ("namespace", "class")):
            seg_start = k + 1
        elif ch == "{":
            seg = code[seg_start:k]
            head = seg.strip()
            if stack and stack[-1][0] not in ("namespace", "class"):
                stack.append(("block", k, ""))  # inside a function, an initializer or an enum
                continue
            before = code[seg_start:k].rstrip()
            if re.match(r"^(inline\s+)?namespace\b", head) or re.match(r'^extern\s*$', head) or head.startswith("extern "):
                stack.append(("namespace", k, ""))
                seg_start = k + 1
            elif re.match(r"^(template\s*<.*>\s*)?(class|struct|union|enum)\b", head, re.S) and "(" not in head.split("{")[0].split(":")[0]:
                stack.append(("class", k, ""))
                seg_start = k + 1
            elif ")" in head and re.search(r"\)\s*:\s*[^:]", head) and before and (before[-1].isalnum() or before[-1] in "_>"):
                stack.append(("init", k, ""))  # a member's brace initializer in a constructor's list
            elif ")" in head and not re.search(r"=\s*$", head) and not head.startswith("="):
                name = re.sub(r"\s+", " ", head.split("(")[0]).split(" ")[-1]
                first = seg_start + (len(seg) - len(seg.lstrip()))
                stack.append(("function", first, name))
            else:
                stack.append(("block", k, ""))
        elif ch == "}":
            if not stack:
                continue
            kind, start, name = stack.pop()
            if kind == "function":
                yield line_of[start], line_of[k], name
            if kind != "init" and (not stack or stack[-1][0] in ("namespace", "class")):
                seg_start = k + 1


def has_reason(lines, first):
    """Whether the comment block just above line `first` (1-based) holds a `// Long:` line."""
    i = first - 2
    while i >= 0 and lines[i].strip().startswith("//"):
        if REASON.match(lines[i]):
            return True
        i -= 1
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-lines", type=int, default=100)
    ap.add_argument("--list", action="store_true", help="every function over the limit, reason or not")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    bad = 0
    for d in a.dirs:
        if not os.path.isdir(d):
            print(f"function_length: {d}: not a folder", file=sys.stderr)
            return 2
        for root, _, names in sorted(os.walk(d)):
            for fn in sorted(names):
                if not fn.endswith((".h", ".cpp", ".cu", ".cuh")):
                    continue
                path = os.path.join(root, fn)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                lines = text.split("\n")
                for first, last, name in functions(text):
                    n = last - first + 1
                    if n <= a.max_lines:
                        continue
                    reason = has_reason(lines, first)
                    if a.list or not reason:
                        print(f"{path}:{first}: {name}: {n} lines{'' if reason else ', no // Long: reason above it'}")
                    bad += 0 if reason else 1
    if bad:
        print(f"function_length: {bad} function(s) over {a.max_lines} lines without a reason", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
