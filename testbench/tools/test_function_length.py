#!/usr/bin/env python3
"""tools/function_length.py on a fixture tree it writes: what it must flag, and what it must not."""
import os
import subprocess
import sys
import tempfile

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "function_length.py")


def body(n, indent="  "):
    return "".join(f"{indent}x += {i};\n" for i in range(n))


FIXTURE = (
    "#include <vector>\n#define TWICE(a) ((a) + (a))\nnamespace outer {\nnamespace {\n"
    # 1. too long, no reason: flagged (lines 5..)
    "int too_long(int x) {\n" + body(100) + "  return x;\n}\n"
    # 2. too long, with its reason: not flagged
    "// A table of steps read top to bottom.\n// Long: one formula per line, as the paper gives them.\n"
    "int long_with_reason(int x) {\n" + body(100) + "  return x;\n}\n"
    # 3. short, with a lambda and braces inside strings and comments: not flagged
    "int short_one(int x) {\n  auto f = [&](int y) { return y + 1; };  // { not a brace\n"
    "  const char* s = \"{{{\";\n  char c = '{';\n  (void)s; (void)c;\n  return f(x) + 1'000;\n}\n"
    "}  // namespace\n"
    # 4. a class with a constructor whose initializer list has a brace: the body is counted
    "struct Thing {\n  Thing(int a) : a_(a), v_{1, 2} {\n" + body(101, "    ") + "  }\n  int a_;\n  std::vector<int> v_;\n"
    "  int x = 0;\n};\n"
    # 5. a table of braces with parentheses at namespace scope: not a function
    "struct Row { const char* name; int (*f)(int); };\n"
    "const Row kRows[] = {\n" + "".join(f"    {{\"r{i}\", nullptr}},  // (row)\n" for i in range(120)) + "};\n"
    "}  // namespace outer\n"
)


def main():
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "fixture.cpp"), "w") as f:
            f.write(FIXTURE)
        r = subprocess.run([sys.executable, TOOL, d], capture_output=True, text=True)
        out = r.stdout
        problems = []
        if r.returncode != 1:
            problems.append(f"exit {r.returncode}, want 1")
        for want in ("fixture.cpp:5: too_long: 103 lines, no // Long: reason above it", ": Thing: 103 lines"):
            if want not in out:
                problems.append(f"missing: {want}")
        for unwanted in ("long_with_reason", "short_one", "kRows", "Row"):
            if f" {unwanted}:" in out:
                problems.append(f"flagged what it must not: {unwanted}")
        if len(out.strip().splitlines()) != 2:
            problems.append("want exactly two functions flagged")
        listed = subprocess.run([sys.executable, TOOL, "--list", d], capture_output=True, text=True).stdout
        if "long_with_reason: 103 lines" not in listed:
            problems.append("--list does not show the function with a reason")
        missing = subprocess.run([sys.executable, TOOL, os.path.join(d, "nowhere")], capture_output=True, text=True)
        if missing.returncode != 2 or "nowhere: not a folder" not in missing.stderr:
            problems.append(f"a missing folder: exit {missing.returncode}, {missing.stderr!r}")
        if problems:
            print("function_length.py:\n  " + "\n  ".join(problems) + "\nit printed:\n" + out + r.stderr)
            return 1
    print("function_length.py flags what it must and nothing else")
    return 0


if __name__ == "__main__":
    sys.exit(main())
