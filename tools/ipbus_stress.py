#!/usr/bin/env python3
"""IPbus stress harness: the demo, many times, on a loaded machine, with the emulator stalled on purpose.

Issue 27's emulator once answered no IPbus request for 6 s under load and the demo failed. Its
failure class: while one request ran, the emulator answered nothing, not even status requests, so
a request that outlasted the client's timeout x (retries + 1) made the client declare the target
dead. This harness makes that happen on demand: every run is `mxtb demo` (random failover
scenarios, `--scenario-seed`) with

  * `--inject-stall MS/EVERY`: every EVERY-th request that reaches the simulation waits MS first,
    as a starved simulation thread would (default 800/250);
  * `--freeze MS/EVERY_S`: every EVERY_S seconds the whole emulator process is stopped (SIGSTOP)
    for MS and continued, as a machine that does not schedule it for that long would do
    (default 1000/4): nothing answers then, status requests included;
  * `--ipbus-timeout-ms T`: the client's time per attempt (default 100, so its whole retry budget,
    6 attempts, is 600 ms: shorter than every injected stall);
  * busy-loop processes beside the runs (`--load`, default 2) and `--jobs` runs at a time.

It prints, and writes as JSON: runs, failures (each with its first lines), the worst IPbus answer
time any client saw (first send to reply, recovery included), timeouts and how many of them were
on a packet the target said it was executing, and the stall lines the emulators logged.

    tools/ipbus_stress.py --mxtb build/mxtb --runs 200 --jobs 4 --out out/ipbus-stress

Exit 1 when any run failed. docs/protocol.md, "Stalls".
"""
import argparse
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def busy_loop():
    while True:
        pass


def emulator_of(demo_pid):
    """The pid of the demo's `mxtb sim` child, or None."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == demo_pid and len(argv) > 1 and argv[1] == b"sim":
            return int(entry)
    return None


def freezer(demo, ms, every_s, done, count):
    """Stops the demo's emulator for ms every every_s seconds until `done` is set."""
    while not done.wait(every_s):
        pid = emulator_of(demo.pid)
        if pid is None:
            continue
        try:
            os.kill(pid, signal.SIGSTOP)
            done.wait(ms / 1000.0)
            os.kill(pid, signal.SIGCONT)
            count[0] += 1
        except ProcessLookupError:
            pass


def run_one(args, k):
    seed = args.first_seed + k
    out = Path(args.out) / f"run-{k:04d}"
    out.mkdir(parents=True, exist_ok=True)
    cmd = [args.mxtb, "demo", "--scenario-seed", str(seed), "--no-waves", "--out", str(out), "--json", str(out / "demo.json"),
           "--ipbus-timeout-ms", str(args.ipbus_timeout_ms)]
    if args.inject_stall != "none":
        cmd += ["--inject-stall", args.inject_stall]
    t0 = time.monotonic()
    demo = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    done, freezes = threading.Event(), [0]
    frz = None
    if args.freeze != "none":
        ms, every_s = args.freeze.split("/")
        frz = threading.Thread(target=freezer, args=(demo, int(ms), float(every_s), done, freezes), daemon=True)
        frz.start()
    try:
        stdout, _ = demo.communicate(timeout=args.run_timeout_s)
    except subprocess.TimeoutExpired:
        demo.kill()
        stdout, _ = demo.communicate()
    done.set()
    if frz:
        frz.join()
    p = subprocess.CompletedProcess(cmd, demo.returncode, stdout)
    wall = time.monotonic() - t0
    result = {"run": k, "scenario_seed": seed, "exit_code": p.returncode, "wall_s": round(wall, 2), "freezes": freezes[0]}
    try:
        with open(out / "demo.json") as f:
            demo = json.load(f)
        result["passed"] = bool(demo["passed"]) and p.returncode == 0
        result["ipbus"] = demo["ipbus"]
        result["failures"] = demo["failures"]
    except (OSError, ValueError, KeyError):
        result["passed"] = False
        result["ipbus"] = None
        result["failures"] = [line for line in p.stdout.splitlines() if line.strip()][-5:]
    log = out / "emulator.log"
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    result["stall_lines"] = sum(1 for line in lines if "IPbus stall:" in line)
    result["emulator_stop"] = next((line for line in reversed(lines) if "stopped at" in line), None)
    if not result["passed"]:
        result["demo_output_tail"] = p.stdout.splitlines()[-12:]
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mxtb", default="build/mxtb")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--load", type=int, default=2, help="busy-loop processes beside the runs")
    ap.add_argument("--first-seed", type=int, default=1, help="run k uses --scenario-seed FIRST_SEED + k")
    ap.add_argument("--ipbus-timeout-ms", type=int, default=100)
    ap.add_argument("--inject-stall", default="800/250", help="MS/EVERY, or 'none'")
    ap.add_argument("--freeze", default="1000/4", help="MS/EVERY_S: stop the emulator process MS every EVERY_S s, or 'none'")
    ap.add_argument("--run-timeout-s", type=float, default=600)
    ap.add_argument("--out", default="out/ipbus-stress")
    ap.add_argument("--json", help="default: OUT/ipbus-stress.json")
    args = ap.parse_args()
    if args.runs < 1 or args.jobs < 1 or args.load < 0:
        ap.error("--runs and --jobs must be at least 1, --load at least 0")
    if not os.access(args.mxtb, os.X_OK):
        ap.error(f"--mxtb {args.mxtb}: not an executable file")
    for flag, value in (("--inject-stall", args.inject_stall), ("--freeze", args.freeze)):
        parts = value.split("/")
        if value != "none" and (len(parts) != 2 or not all(x.replace(".", "", 1).isdigit() for x in parts) or float(parts[1]) <= 0):
            ap.error(f"{flag} {value}: want MS/EVERY (positive numbers) or 'none'")
    Path(args.out).mkdir(parents=True, exist_ok=True)

    load = [multiprocessing.Process(target=busy_loop, daemon=True) for _ in range(args.load)]
    for p in load:
        p.start()
    t0 = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(lambda k: run_one(args, k), range(args.runs)))
    finally:
        for p in load:
            p.terminate()
    wall = time.monotonic() - t0

    failed = [r for r in results if not r["passed"]]
    answered = [r["ipbus"] for r in results if r["ipbus"]]
    worst = max((i["worst_answer_ms"] for i in answered), default=0.0)
    summary = {
        "runs": len(results), "failed": len(failed), "wall_s": round(wall, 1), "jobs": args.jobs, "load": args.load,
        "inject_stall": args.inject_stall, "ipbus_timeout_ms": args.ipbus_timeout_ms,
        "client_retry_budget_ms": args.ipbus_timeout_ms * 6,
        "worst_answer_ms": round(worst, 1),
        "packets": sum(i["packets"] for i in answered),
        "timeouts": sum(i["timeouts"] for i in answered),
        "busy_waits": sum(i["busy_waits"] for i in answered),
        "silent_waits": sum(i.get("silent_waits", 0) for i in answered),
        "freezes": sum(r["freezes"] for r in results), "freeze": args.freeze,
        "resend_requests": sum(i["resend_requests"] for i in answered),
        "stall_lines": sum(r["stall_lines"] for r in results),
        "results": results,
    }
    path = args.json or str(Path(args.out) / "ipbus-stress.json")
    with open(path, "w") as f:
        json.dump(summary, f, indent=2)
    print(f"ipbus stress: {summary['runs']} runs, {summary['failed']} failed, {summary['wall_s']} s wall "
          f"({args.jobs} at a time beside {args.load} busy loops; stall {args.inject_stall}, freeze {args.freeze}, client "
          f"timeout {args.ipbus_timeout_ms} ms x 6 attempts)")
    print(f"  worst IPbus answer {summary['worst_answer_ms']} ms; {summary['packets']} packets, {summary['timeouts']} timeouts, "
          f"{summary['busy_waits']} of them on a packet the target said it was executing; {summary['freezes']} process freezes, "
          f"{summary['silent_waits']} status rounds unanswered while the emulator's process was alive; "
          f"{summary['resend_requests']} resend requests; {summary['stall_lines']} stall lines in the emulators' logs")
    for r in failed[:10]:
        print(f"  FAIL run {r['run']} (scenario seed {r['scenario_seed']}, exit {r['exit_code']}): "
              + "; ".join(r["failures"][:2] if r["failures"] else r.get("demo_output_tail", [])[-2:]))
    print(f"  wrote {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
