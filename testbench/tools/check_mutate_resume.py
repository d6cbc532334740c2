#!/usr/bin/env python3
"""bench_mutate_reviewer_sample: the reviewer's exhaustive campaign on a fixed sample of 4 of the
link layer's mutants (every mutant gets a verdict, so the models rebuild and pass), then --resume
from that report, which must run none of them again and report the same four verdicts.

    check_mutate_resume.py PYTHON MUTATE_PY BUILD_DIR OUT_DIR
"""
import json
import subprocess
import sys

python, mutate, build, out = sys.argv[1:5]
base = [python, mutate, "--build", build, "--groups", "link", "--exhaustive", "--sample", "4"]
subprocess.run(base + ["--out", out], check=True)
resumed = subprocess.run(base + ["--resume", f"{out}/mutate.json", "--out", f"{out}-resumed"], check=True,
                         capture_output=True, text=True)
print(resumed.stdout)
if f"--resume: 4 mutants done in {out}/mutate.json, 0 to run" not in resumed.stdout:
    sys.exit("FAIL: --resume ran mutants again, or did not find the four")


def verdicts(path):
    return sorted((str(m["site"]), m["status"]) for m in json.load(open(path))["mutants"])


first, again = verdicts(f"{out}/mutate.json"), verdicts(f"{out}-resumed/mutate.json")
if len(first) != 4 or first != again:
    sys.exit(f"FAIL: the resumed report differs: {first} against {again}")
print("resumed report: the same 4 verdicts")
