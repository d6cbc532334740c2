#!/usr/bin/env python3
"""The docs hold together: every page of docs/ is in the README's table of docs, and every local
link in the README and docs/ names a file that exists (anchors are not checked).

    testbench/docs/check_docs.py ROOT

Prints one line per problem and exits 1; exits 0 when there is none.
"""
import glob
import os
import re
import sys


def problems(root):
    found = []
    readme = os.path.join(root, "README.md")
    with open(readme, encoding="utf-8") as f:
        table = {m.group(1) for m in re.finditer(r"^\| \[[^\]]*\]\(([^)]+)\)", f.read(), re.M)}
    pages = sorted(glob.glob(os.path.join(root, "docs", "*.md")) + glob.glob(os.path.join(root, "docs", "generated", "*.md")))
    for p in pages:
        rel = os.path.relpath(p, root)
        if rel not in table:
            found.append(f"README.md: the table of docs lacks {rel}")
    for p in [readme] + pages:
        with open(p, encoding="utf-8") as f:
            text = f.read()
        for n, line in enumerate(text.split("\n"), 1):
            for m in re.finditer(r"\]\(([^)\s]+)\)", line):
                link = m.group(1)
                if re.match(r"^[a-z]+:", link) or link.startswith("#"):
                    continue
                target = os.path.normpath(os.path.join(os.path.dirname(p), link.split("#")[0]))
                if not os.path.exists(target):
                    found.append(f"{os.path.relpath(p, root)}:{n}: links {link}, which does not exist")
    return found


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isfile(os.path.join(sys.argv[1], "README.md")):
        sys.exit("usage: check_docs.py ROOT (a tree with README.md)")
    bad = problems(sys.argv[1])
    print("\n".join(bad) if bad else "docs: every page in the README's table, every local link resolves")
    sys.exit(1 if bad else 0)
