#!/usr/bin/env python3
"""Integration checks of a served rack, `mxtb rack --serve` (docs/rack.md, "A rack on the network"):
every server's board answers IPbus on its own UDP port, reached with `mxtb reg` as S boards would be.

  check_rack_serve.py MXTB OUT lockstep SCENARIO [P]  lockstep on P processes (default 1): one endpoint a server, each
      its own board (its RAM, its links Active), the rack's time still between requests and moved for
      every board by a time command to any one; an XPU killed on the last server takes down lanes of
      server 0 (the fault crosses the fibres); SIGINT ends it, exit 0, the report written
  check_rack_serve.py MXTB OUT free SCENARIO      --processes 2, free: every server answers, time runs
      on its own; --stop-after-s ends both processes at the same cycle, exit 0
  check_rack_serve.py MXTB OUT bad SCENARIO       serving and launcher flags refused as usage errors
      (exit 2), nothing started
"""
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

LISTEN = re.compile(r"^listening on (udp://\S+) server (\d+)$")
ACTIVE = 6  # link_pkg's Active (docs/generated/link-defs.md)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def start(mxtb, args, servers):
    """Starts the served rack; returns the process and every server's address, by server."""
    p = subprocess.Popen([mxtb, "rack"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    addr = {}
    deadline = time.time() + 300
    while len(addr) < servers:
        line = p.stdout.readline()
        if not line:
            fail(f"mxtb rack {' '.join(args)} ended before every server listened (exit {p.wait()}):\n{p.stderr.read()}")
        m = LISTEN.match(line.strip())
        if m:
            addr[int(m.group(2))] = m.group(1)
        if time.time() > deadline:
            p.kill()
            fail("no listening lines within 300 s")
    return p, addr


def reg(mxtb, target, *args):
    p = subprocess.run([mxtb, "reg"] + list(args[:1]) + ["--target", target] + list(args[1:]), capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        fail(f"mxtb reg {' '.join(args)} on {target}: exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p.stdout


def value_of(line):
    # "NAME  0x00000006  (state=0x6 reason=0x0)" or "NAME (0x81)  0x00000006  (...)": the value is the
    # first hex word after the name that is not in parentheses.
    words = [w for w in line.split() if w.startswith("0x")]
    return int(words[0], 16)


def read_words(mxtb, target, name, count=1):
    out = reg(mxtb, target, "read", name, "--count", str(count))
    return [value_of(line) for line in out.splitlines() if line.strip()]


def time_ns(mxtb, target):
    lo, hi = read_words(mxtb, target, "emu.TIME_NS_LO", 2)
    return hi << 32 | lo


def lanes_active(mxtb, target):
    return sum(1 for v in read_words(mxtb, target, "LINK_STATUS", 20) if v & 0xF == ACTIVE)


def finish(p, sig, out):
    if sig is not None:
        p.send_signal(sig)
    try:
        stdout, stderr = p.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("the served rack did not end within 300 s of being stopped")
    if p.returncode != 0:
        fail(f"the served rack ended with exit {p.returncode}:\n{stdout}\n{stderr}")
    report = json.loads(Path(out, "rack.json").read_text())
    return report, stdout, stderr


def lockstep(mxtb, out, scenario, processes="1"):
    rack = json.loads(Path(scenario).read_text())["rack"]
    servers = rack["servers_x"] * rack.get("servers_y", 1)
    waves = Path(out, "waves")
    p, addr = start(mxtb, ["--scenario", scenario, "--out", out, "--serve", "--time-mode", "lockstep", "--fst-dir", str(waves),
                           "--processes", processes], servers)
    if sorted(addr) != list(range(servers)) or len(set(addr.values())) != servers:
        fail(f"want one address a server, got {addr}")
    # Each server is its board: its tenant lanes Active, its own RAM.
    for s, a in addr.items():
        if lanes_active(mxtb, a) < 16:
            fail(f"server {s}: fewer than 16 lanes Active once the rack listens")
    for s, a in addr.items():
        reg(mxtb, a, "write", "ram[7]", hex(0x5E0 + s))
    for s, a in addr.items():
        got = read_words(mxtb, a, "ram[7]")[0]
        if got != 0x5E0 + s:
            fail(f"server {s}: ram[7] reads {got:#x}, want {0x5E0 + s:#x} (the boards share a RAM?)")
    # Lockstep: time stands still between requests (a read's own bus cycles move it a little).
    t0 = time_ns(mxtb, addr[0])
    time.sleep(1.0)
    t1 = time_ns(mxtb, addr[0])
    if not 0 <= t1 - t0 < 20_000:
        fail(f"lockstep: server 0's time moved {t1 - t0} ns in 1 s of wall time between requests")
    # A time command to the last server moves the whole rack (with its waveform on, alone).
    last = servers - 1
    reg(mxtb, addr[last], "write", "emu.WAVE_CTRL", "1")
    reg(mxtb, addr[last], "write", "emu.ADVANCE_NS", "2000")
    reg(mxtb, addr[last], "write", "emu.WAVE_CTRL", "0")
    reg(mxtb, addr[last], "write", "emu.ADVANCE_NS", "48000")
    t2 = time_ns(mxtb, addr[0])
    if t2 - t1 < 50_000:
        fail(f"ADVANCE_NS 50000 on server {last} moved server 0's time only {t2 - t1} ns")
    # The blast radius crosses the fibres: XPU 0 of the last server dies, and lanes of server 0 that
    # ran to it over a fibre leave Active.
    before = lanes_active(mxtb, addr[0])
    reg(mxtb, addr[last], "write", "emu.FAULT_TARGET", "0")
    reg(mxtb, addr[last], "write", "emu.FAULT_AT_LO", "0")
    reg(mxtb, addr[last], "write", "emu.FAULT_AT_HI", "0")
    reg(mxtb, addr[last], "write", "emu.FAULT_ARM", "1")  # KillXpu
    reg(mxtb, addr[0], "write", "emu.ADVANCE_NS", "100000")
    after = lanes_active(mxtb, addr[0])
    if after >= before:
        fail(f"XPU 0 of server {last} killed: server 0 still has {after} lanes Active of {before}")
    report, stdout, stderr = finish(p, signal.SIGINT, out)
    cycles = {s["cycles"] for s in report["servers"]}
    if len(report["servers"]) != servers:
        fail(f"report has {len(report['servers'])} servers, want {servers}")
    if "stopped at simulated time" not in stderr:
        fail("no stop line on stderr:\n" + stderr)
    dumped = sorted(f.name for f in waves.glob("*.fst"))
    if dumped != [f"server{last}.fst"] or Path(waves, dumped[0]).stat().st_size < 1000:
        fail(f"waveforms: want server{last}.fst alone and not empty, got {dumped}")
    if len(cycles) != 1 and processes != "1":
        fail(f"the processes stopped at different cycles: {sorted(cycles)}")
    print(f"PASS: {servers} servers served in lockstep on {processes} process(es); ADVANCE_NS on server {last} moved server 0 {t2 - t1} ns; "
          f"killing XPU 0 of server {last} took server 0 from {before} to {after} Active lanes; stopped at cycles {sorted(cycles)}")


def free(mxtb, out, scenario, processes="2"):
    p, addr = start(mxtb, ["--scenario", scenario, "--out", out, "--serve", "--processes", processes, "--time-mode", "free",
                           "--stop-after-s", "12"], 2)
    t = {s: time_ns(mxtb, a) for s, a in addr.items()}
    time.sleep(1.0)
    for s, a in addr.items():
        if time_ns(mxtb, a) <= t[s]:
            fail(f"free: server {s}'s time did not move in 1 s")
        if lanes_active(mxtb, a) < 16:
            fail(f"server {s}: fewer than 16 lanes Active")
    report, stdout, stderr = finish(p, None, out)
    cycles = [s["cycles"] for s in report["servers"]]
    if len(set(cycles)) != 1:
        fail(f"the two processes stopped at different cycles: {cycles}")
    if not report["passed"]:
        fail(f"failures: {report['failures']}")
    print(f"PASS: 2 processes served free; both stopped at cycle {cycles[0]}")


def bad(mxtb, out, scenario):
    cases = [
        (["--time-mode", "free"], "--time-mode applies to a served rack: add --serve"),
        (["--serve", "--processes", "3"], "--processes 3: the rack has 2 servers"),
        (["--serve", "--rtf", "2"], "--rtf only applies to --time-mode paced"),
        (["--serve", "--listen", "127.0.0.1:65535"], "past 65535"),
        (["--serve", "--listen", "nowhere"], "nowhere"),
        (["--serve", "--time-mode", "sometimes"], "sometimes"),
        (["--partition", "debug"], "--partition is for --launcher slurm"),
        (["--launcher", "slurm", "--time-limit", "soon"], "--time-limit 'soon' is not sbatch's --time syntax"),
        (["--launcher", "pbs"], "pbs"),
        (["--job"], "--job applies to a served rack: add --serve"),
        (["--serve", "--job", "--processes", "2"], "--job with --processes 2: the tenant's job runs in one process"),
    ]
    for args, want in cases:
        p = subprocess.run([mxtb, "rack", "--scenario", scenario, "--out", out] + args, capture_output=True, text=True, timeout=60)
        if p.returncode != 2 or want not in p.stderr:
            fail(f"mxtb rack {' '.join(args)}: exit {p.returncode}, want 2 with '{want}'\n{p.stdout}{p.stderr}")
        if "listening on" in p.stdout or Path(out, "rack.json").exists():
            fail(f"mxtb rack {' '.join(args)}: started or wrote a report though refused")
    print(f"PASS: {len(cases)} bad serving and launcher flags refused, nothing started")


def main():
    mxtb, out, what, scenario = sys.argv[1:5]
    {"lockstep": lockstep, "free": free, "bad": bad}[what](mxtb, out, scenario, *sys.argv[5:])


if __name__ == "__main__":
    main()
