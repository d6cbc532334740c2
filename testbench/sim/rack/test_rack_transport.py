#!/usr/bin/env python3
"""Runs rack_transport_check under hydra's mpiexec and checks what a scenario must give.

  exchange  exit 0 and "exchange ok" (the program checks every window's contents itself), and
            one oversubscription warning from rank 0 exactly when processes outnumber cores
  mismatch  a non-zero exit, and every process reports the disagreement naming the odd rank and
            both values
  kill      rank 0 kills rank 1 with SIGKILL mid-run: mpiexec exits non-zero within
            KILL_BOUND_S of the kill, every survivor that reports names a process by host, pid
            and label (how many named rank 1 is printed: hydra kills them within milliseconds,
            often before they can tell), and none of the processes is left
  stall     rank 1 stops (SIGSTOP): the survivors time out (peer timeout 2 s) naming it (one
            at least: hydra kills the others when the first exits), and mpiexec ends within
            STALL_BOUND_S, the stopped process included
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

# The bounds the transport states (docs/rack-transport.md), with room for a loaded machine.
KILL_BOUND_S = 5.0
STALL_BOUND_S = 2.0 + 5.0


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def pids_of(output):
    return {int(r): int(p) for r, p in re.findall(r"^pid (\d+) (\d+)$", output, re.M)}


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def check_none_left(pids):
    deadline = time.monotonic() + 2.0
    while any(alive(p) for p in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [f"rank {r} pid {p}" for r, p in pids.items() if alive(p)]
    if left:
        fail(f"processes left behind: {', '.join(left)}")


def run(args, scenario_args, timeout):
    command = [args.mpiexec, "-n", str(args.processes), "-bind-to", "none", args.program] + scenario_args
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    return result, time.monotonic() - start


def check_exchange(args):
    result, took = run(args, ["exchange", "3000"], 50)
    print(result.stdout + result.stderr)
    if result.returncode != 0 or "exchange ok" not in result.stdout:
        fail(f"exchange: exit {result.returncode}, no 'exchange ok'")
    print(f"exchange: {args.processes} processes, 3000 windows in {took:.2f} s")
    # One warning line, from rank 0, exactly when the processes outnumber this host's cores.
    warnings = [l for l in result.stderr.splitlines() if l.startswith("mxtb: warning:")]
    cores = len(os.sched_getaffinity(0))
    expected = 1 if args.processes > cores else 0
    if len(warnings) != expected:
        fail(f"exchange: {len(warnings)} oversubscription warnings with {args.processes} processes on {cores} cores, {expected} expected")
    if warnings and not re.search(rf"{args.processes} rack processes on {cores} cores .* costs \d+ us here", warnings[0]):
        fail(f"exchange: the warning does not give the processes, cores and measured cost: {warnings[0]}")


def check_mismatch(args):
    result, _ = run(args, ["mismatch"], 50)
    print(result.stdout + result.stderr)
    odd = args.processes - 1
    if result.returncode == 0:
        fail("mismatch: mpiexec exited 0")
    host = socket.gethostname()
    pids = pids_of(result.stdout)
    wanted = (f'process {odd} (host {host}, pid {pids.get(odd)}, servers {2 * odd}-{2 * odd + 1}) has "sha256:bbbb", '
              f'process 0 (host {host}, pid {pids.get(0)}, servers 0-1) has "sha256:aaaa"')
    for r in range(args.processes):
        line = next((l for l in result.stdout.splitlines() if l.startswith(f"rank {r} caught:")), None)
        if line is None or wanted not in line:
            fail(f"mismatch: rank {r} did not report '{wanted}' (got {line!r})")
    check_none_left(pids)


def check_failure(args, scenario):
    with tempfile.TemporaryDirectory() as reports:
        bound = KILL_BOUND_S if scenario == "kill" else STALL_BOUND_S
        result, _ = run(args, [scenario, "1", reports], 50)
        ended = time.clock_gettime(time.CLOCK_MONOTONIC)
        print(result.stdout + result.stderr)
        killed = re.search(r"^killed rank 1 pid (\d+) at ([\d.]+)$", result.stdout, re.M)
        if not killed:
            fail(f"{scenario}: rank 0 did not report the kill")
        pids = pids_of(result.stdout)
        after = ended - float(killed.group(2))
        print(f"{scenario}: mpiexec exited {result.returncode}, {after:.3f} s after the signal")
        if result.returncode == 0:
            fail(f"{scenario}: mpiexec exited 0")
        if after > bound:
            fail(f"{scenario}: the rack took {after:.2f} s to end, bound {bound} s")
        host = socket.gethostname()
        victim = f"rack process 1 (host {host}, pid {killed.group(1)}, servers 2-3)"
        named = 0
        reports_seen = sorted(n for n in os.listdir(reports) if not n.endswith(".part"))  # a .part: killed mid-write
        for name in reports_seen:
            with open(os.path.join(reports, name)) as f:
                text = f.read()
            print(f"{name}: {text.strip()}")
            if not re.search(rf"rack process \d+ \(host {re.escape(host)}, pid \d+, servers \d+-\d+\)", text):
                fail(f"{scenario}: {name} does not name a process by host, pid and label")
            named += victim in text
        if scenario == "stall":
            # A stopped process answers nobody: the survivors time out naming it. The first to exit
            # has hydra kill the others, and one of those may first see a killed one die and name
            # that one instead: one report at least names the stopped process.
            print(f"stall: {named} of {len(reports_seen)} reports name {victim}")
            if named == 0:
                fail(f"stall: no survivor named {victim}")
        else:
            # hydra kills the survivors within milliseconds of the death: some, at times all, are
            # gone before their 1 ms liveness check, and hydra's report names whichever process it
            # reaped first (at times a survivor it killed). So naming is reported, not required.
            print(f"kill: {named} survivors named {victim}")
        check_none_left(pids)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--program", required=True)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("scenario", choices=["exchange", "mismatch", "kill", "stall"])
    args = parser.parse_args()
    if args.scenario == "exchange":
        check_exchange(args)
    elif args.scenario == "mismatch":
        check_mismatch(args)
    else:
        check_failure(args, args.scenario)
    print("PASS")


if __name__ == "__main__":
    main()
