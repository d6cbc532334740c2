#!/usr/bin/env python3
"""Integration checks of `mxtb rack` (docs/rack.md), each a subcommand that exits non-zero on failure.

  check_rack.py MXTB OUT smoke SCENARIO        the rack runs, every tenant lane Active, traffic across fibres
  check_rack.py MXTB OUT same SCENARIO A -- B  two runs (flags A, flags B) give byte-identical reports and event logs
  check_rack.py MXTB OUT same-waves SCENARIO A -- B   the same, and every server's waveform identical but for its date
  check_rack.py MXTB OUT faults SCENARIO       a cut fibre's lanes are down at the end, a dark window's back up
  check_rack.py MXTB OUT bad DIR               every rack file in DIR is refused: exit 2, its message, nothing written
  check_rack.py MXTB OUT kill SCENARIO         --processes 2, the last process killed mid-run: the rack ends within
                                               the bound, non-zero, no process left, no report written
  check_rack.py MXTB OUT mismatch A            two processes started with A and a copy of A with another seed: refused, naming both
  check_rack.py MXTB OUT collective SCENARIO   `mxtb collective --rack`: exact across servers, under the fibres' limit, repeatable
  check_rack.py MXTB OUT failover SCENARIO     `mxtb rack-failover` on a rack of two servers: the own server's spare, then the
                                               other's across both boards, then none left; bad --fail values refused
  check_rack.py MXTB OUT tenants RACKS         `mxtb rack-failover --tenants`: tenants placed by the allocator, each running its
                                               job; two deaths in tenant 0, every other tenant's job never aborted; bad uses refused
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

# What each bad rack file must be refused with (a piece of the message).
BAD = {
    "port-twice.json": "fibre 1 end b: port 23 of server 1 is already joined by fibre 0",
    "no-such-server.json": "fibre 0 end b: server 5 does not exist (the rack has servers 0..1)",
    "latency-below-cycle.json": "fibre 0: 0.3 m of fibre and 0 ns of retimers take 1.47 ns, below one cycle",
    "too-few-fibres.json": "than the 2 fibres joining them",
    "fibres-do-not-fit.json": "$.rack.fibres_per_neighbour: rack: 4 sides x 4 fibres need 16 fibre ports",
    "fault-no-fibre.json": "$.faults[0].fibre: fibre 99 does not exist (the wiring has fibres 0..23)",
    "unknown-field.json": "$.rack.colour: unknown field",
    "tenants-share-an-xpu.json": "tenant 1: server 0 XPU 3 is tenant 0's",
    "tenant-and-tenants.json": "$.tenants: give either \"tenant\" (one) or \"tenants\" (several), not both",
    "spare-ready-not-bool.json": "$.spare_ready: must be true or false, got \"yes\"",
}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(mxtb, args, expect_rc=0):
    p = subprocess.run([mxtb, "rack"] + args, capture_output=True, text=True, timeout=1200)
    if p.returncode != expect_rc:
        fail(f"mxtb rack {' '.join(args)}: exit {p.returncode}, want {expect_rc}\n{p.stdout}\n{p.stderr}")
    return p


def report(out):
    return json.loads(Path(out, "rack.json").read_text())


def smoke(mxtb, out, scenario):
    p = run(mxtb, ["--scenario", scenario, "--out", out])
    r = report(out)
    if not r["passed"] or r["failures"]:
        fail(f"failures: {r['failures']}")
    crossing = 0
    for s in r["servers"]:
        if s["scoreboard_errors"] != 0:
            fail(f"server {s['server']}: {s['scoreboard_errors']} scoreboard errors")
        for lane in s["lanes"]:
            if lane["state"] != "Active" or lane["messages_delivered"] == 0:
                fail(f"server {s['server']} lane {lane}: not Active with traffic")
            if lane["fibre"] is not None:
                crossing += 1
                if lane["frames_rx"] == 0:
                    fail(f"server {s['server']} link {lane['link']}: no frame received over fibre {lane['fibre']}")
    fibres = len(r["rack"]["fibres"])
    if fibres and crossing == 0:
        fail("no lane crosses a fibre")
    for s in r["servers"]:
        ev = Path(out, "events", f"server{s['server']}.events.jsonl")
        if not ev.exists() or not ev.read_text().strip():
            fail(f"no event log {ev}")
    if "PASS" not in p.stdout:
        fail("no PASS line:\n" + p.stdout)
    print(f"ok: {len(r['servers'])} servers, {crossing} lane ends over {fibres} fibres, all Active")


# The one thing an FST file holds that is not the simulation's: the wall-clock date its writer
# stamps into the header (fstapi's 26-byte ctime string).
FST_DATE = re.compile(rb"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\n")


def fst_without_date(path):
    data = Path(path).read_bytes()
    m = FST_DATE.search(data, 0, 1024)
    if not m:
        fail(f"{path}: no FST header date found in its first 1024 bytes (not an FST file?)")
    return data[:m.start()] + data[m.end():]


def same(mxtb, out, scenario, a, b, waves=False):
    """Two runs give byte-identical reports and event logs; with `waves`, each run also dumps every
    server's waveform (--fst-dir OUT.i/waves) and the FST files must be identical but for their date."""
    outs = []
    for i, flags in enumerate((a, b)):
        o = f"{out}.{i}"
        run(mxtb, ["--scenario", scenario, "--out", o] + flags + (["--fst-dir", f"{o}/waves"] if waves else []))
        outs.append(o)
    if waves:
        dumped = sorted(Path(outs[0], "waves").glob("*.fst"))
        if not dumped or [f.name for f in dumped] != sorted(f.name for f in Path(outs[1], "waves").glob("*.fst")):
            fail(f"waveforms: {[f.name for f in dumped]} against {sorted(f.name for f in Path(outs[1], 'waves').glob('*.fst'))}")
        for f in dumped:
            if fst_without_date(f) != fst_without_date(Path(outs[1], "waves", f.name)):
                fail(f"waveform {f.name} differs between {a} and {b}")
        for o in outs:  # tens of MB each: the comparison was the point
            shutil.rmtree(Path(o, "waves"))
    ra, rb = (Path(o, "rack.json").read_bytes() for o in outs)
    if ra != rb:
        fail(f"rack.json differs between {a} and {b}")
    for ev in sorted(Path(outs[0], "events").iterdir()):
        if ev.read_bytes() != Path(outs[1], "events", ev.name).read_bytes():
            fail(f"{ev.name} differs between {a} and {b}")
    if not report(outs[0])["passed"]:
        fail("the runs did not pass")
    print(f"ok: identical reports, event logs{' and waveforms' if waves else ''} for {a} and {b}")


def faults(mxtb, out, scenario):
    run(mxtb, ["--scenario", scenario, "--out", out])
    r = report(out)
    cut = {f["fibre"] for f in r["rack"]["faults"] if f["kind"] == "fibre_cut"}
    dark = {f["fibre"] for f in r["rack"]["faults"] if f["kind"] == "fibre_dark"}
    seen_cut = seen_dark = 0
    for s in r["servers"]:
        for lane in s["lanes"]:
            if lane["fibre"] in cut:
                seen_cut += 1
                if lane["state"] == "Active":
                    fail(f"server {s['server']} link {lane['link']} on cut fibre {lane['fibre']} is Active")
            else:
                if lane["state"] != "Active":
                    fail(f"server {s['server']} link {lane['link']} ({lane['fibre']}) is {lane['state']}")
                if lane["fibre"] in dark:
                    seen_dark += 1
                    if lane["retrains"] == 0:
                        fail(f"server {s['server']} link {lane['link']} on dark fibre {lane['fibre']} never retrained")
    if seen_cut != 2 * len(cut) or seen_dark != 2 * len(dark):
        fail(f"{seen_cut} lane ends on cut fibres, {seen_dark} on dark ones: want 2 per fibre")
    print(f"ok: {seen_cut} lane ends down on cut fibres {sorted(cut)}, {seen_dark} back after dark fibres {sorted(dark)}")


def bad(mxtb, out, folder):
    for name, want in BAD.items():
        o = f"{out}.{name}"
        p = run(mxtb, ["--scenario", str(Path(folder, name)), "--out", o], expect_rc=2)
        if want not in p.stderr or name not in p.stderr:
            fail(f"{name}: want the message to name the file and say '{want}', got:\n{p.stderr}")
        if os.path.exists(o):
            fail(f"{name}: {o} was written although the file was refused")
    print(f"ok: {len(BAD)} bad rack files refused by name")


def children_of(pid):
    """Every process below pid (from /proc), deepest last."""
    out, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        try:
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            kids = []
        for k in kids:
            out.append(int(k))
            frontier.append(int(k))
    return out


def kill(mxtb, out, scenario):
    # Long enough that the run is mid-way when the process dies.
    p = subprocess.Popen([mxtb, "rack", "--scenario", scenario, "--out", out, "--processes", "2", "--peer-timeout-s", "5"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ranks = []
    deadline = time.time() + 60
    while time.time() < deadline and len(ranks) < 2:
        time.sleep(0.2)
        ranks = [c for c in children_of(p.pid)
                 if Path(f"/proc/{c}/cmdline").exists() and b"rack" in Path(f"/proc/{c}/cmdline").read_bytes()
                 and b"mpiexec" not in Path(f"/proc/{c}/cmdline").read_bytes()]
    if len(ranks) < 2:
        p.kill()
        fail(f"the two rack processes did not start: {ranks}")
    time.sleep(2.0)  # they are in the run
    if p.poll() is not None:
        fail("the rack ended before a process could be killed; use a longer scenario")
    victim = max(ranks)
    everyone = children_of(p.pid)
    os.kill(victim, signal.SIGKILL)
    t0 = time.time()
    try:
        stdout, stderr = p.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("the rack did not end within 15 s of a process's death")
    took = time.time() - t0
    if p.returncode == 0:
        fail("the rack exited 0 although a process died")
    left = [q for q in everyone if Path(f"/proc/{q}").exists() and Path(f"/proc/{q}/stat").read_text().split()[2] != "Z"]
    if left:
        fail(f"processes left behind: {left}")
    if Path(out, "rack.json").exists():
        fail("rack.json was written by a rack that did not finish")
    if str(victim) not in stderr and "process 1" not in stderr:
        fail(f"nothing names the dead process (pid {victim}):\n{stderr}")
    print(f"ok: killed pid {victim}; the rack ended in {took:.2f} s, exit {p.returncode}, nothing left, no report")


def mismatch(mxtb, out, a):
    import shutil
    os.makedirs(out, exist_ok=True)
    b = str(Path(out, "other-seed-" + Path(a).name))
    j = json.loads(Path(a).read_text())
    j["seed"] = j.get("seed", 1) + 1
    Path(b).write_text(json.dumps(j))
    mpiexec = shutil.which("mpiexec.hydra") or shutil.which("mpiexec.mpich")
    if not mpiexec:
        fail("no MPICH mpiexec")
    cmd = [mpiexec, "-n", "1", mxtb, "rack", "--scenario", a, "--out", out, "--processes", "2", ":",
           "-n", "1", mxtb, "rack", "--scenario", b, "--out", out, "--processes", "2"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode == 0:
        fail("two processes with different rack files ran")
    if "disagree on rack file" not in p.stderr or Path(a).name not in p.stderr or Path(b).name not in p.stderr:
        fail(f"the refusal does not name both files:\n{p.stderr}")
    print("ok: different rack files refused, both named")


def collective(mxtb, out, scenario):
    """`mxtb collective --rack`: element-exact results across servers, busbw under the fibres' limit
    and near it at the largest size, the same figures on a second run, and its bad input refused."""
    Path(out).mkdir(parents=True, exist_ok=True)
    figures = []
    for op, dtype in (("all_reduce", "float"), ("reduce_scatter", "bfloat16")):
        for attempt in range(2):
            js = Path(out, f"{op}-{attempt}.json")
            p = subprocess.run([mxtb, "collective", "--rack", scenario, "--op", op, "--type", dtype, "--minbytes", "4K",
                                "--maxbytes", "64K", "--stepfactor", "4", "--json", str(js)], capture_output=True, text=True, timeout=600)
            if p.returncode != 0:
                fail(f"mxtb collective --rack {scenario} --op {op}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
            j = json.loads(js.read_text())
            rows = j["placements"]["rack"]["rows"]
            if not j["passed"] or len(rows) != 3 or j["fibre_hops"] < 2:
                fail(f"{op}: passed {j['passed']}, {len(rows)} sizes, {j['fibre_hops']} hops across fibres")
            for r in rows:
                if r["wrong"] != 0 or r["framing_errors"] != 0 or not r["completed"]:
                    fail(f"{op} {r['size']} B: {r}")
                if r["busbw_gbs"] > j["limit_busbw_gbs"]:
                    fail(f"{op} {r['size']} B: busbw {r['busbw_gbs']} above the fibres' limit {j['limit_busbw_gbs']}")
            if rows[-1]["busbw_gbs"] < 0.6 * j["limit_busbw_gbs"]:
                fail(f"{op} at {rows[-1]['size']} B: busbw {rows[-1]['busbw_gbs']:.3f} GB/s, below 60 % of the limit {j['limit_busbw_gbs']}")
            figures.append([(r["size"], r["cycles"]) for r in rows])
        if figures[-1] != figures[-2]:
            fail(f"{op}: two runs of the same rack and seed took different cycles: {figures[-2]} and {figures[-1]}")
    bad_cases = [
        (["--tenant", "0,1"], "--tenant does not go with --rack"),
        (["--op", "all"], "--rack runs one --op at a time"),
        (["--maxbytes", "8", "--minbytes", "8"], "less than one element per rank"),
    ]
    for args, want in bad_cases:
        p = subprocess.run([mxtb, "collective", "--rack", scenario] + args, capture_output=True, text=True, timeout=120)
        if p.returncode != 2 or want not in p.stderr:
            fail(f"mxtb collective --rack {' '.join(args)}: exit {p.returncode}, want 2 with '{want}'\n{p.stdout}{p.stderr}")
    p = subprocess.run([mxtb, "collective", "--rack", str(Path(out, "no-such-rack.json"))], capture_output=True, text=True, timeout=60)
    if p.returncode != 2 or "no-such-rack.json" not in p.stderr:
        fail(f"a missing rack file: exit {p.returncode}\n{p.stderr}")
    print(f"PASS: all_reduce and reduce_scatter across servers exact, under the fibres' limit, the same cycles twice; "
          f"{len(bad_cases) + 1} bad inputs refused")


def failover(mxtb, out, scenario):
    shutil.rmtree(out, ignore_errors=True)
    args = ["--scenario", scenario, "--out", out]
    p = subprocess.run([mxtb, "rack-failover"] + args + ["--fail", "0.1,0.2,1.0"], capture_output=True, text=True, timeout=600)
    print(p.stdout)
    if p.returncode != 1:  # the third death finds no spare
        fail(f"mxtb rack-failover: exit {p.returncode}, want 1\n{p.stderr}")
    r = json.loads(Path(out, "rack-failover.json").read_text())["failovers"]
    if len(r) != 3:
        fail(f"{len(r)} failovers in the report, want 3")
    same_server, other, none = r
    want = [(same_server, "0.4", True, [0]), (other, "1.4", False, [0, 1])]
    for rec, spare, same_srv, boards in want:
        if rec["spare"] != spare or rec["same_server"] != same_srv or rec["outcome"] != "committed" or rec["problems"]:
            fail(f"{rec['failed']}: spare {rec['spare']}, same server {rec['same_server']}, {rec['outcome']}: {rec['problems']}")
        if rec["blast_radius"]["boards_touched"] != boards:
            fail(f"{rec['failed']}: boards touched {rec['blast_radius']['boards_touched']}, want {boards}")
        if rec["failed"] not in rec["blast_radius"]["xpus_left_active"]:
            fail(f"{rec['failed']}: the dead XPU is not among those whose links left Active")
        if not 0 < rec["detect_ns"] < rec["total_ns"]:
            fail(f"{rec['failed']}: detect {rec['detect_ns']} ns, total {rec['total_ns']} ns")
    for rec in (same_server, other):  # the cross-board transaction holds the links between its commits
        lost, errors = rec["blast_radius"]["words_lost"], rec["blast_radius"]["scoreboard_errors"]
        if lost != 0 or errors != 0:
            fail(f"{rec['failed']}: {errors} scoreboard errors, {lost} words lost (want 0 and 0)")
    if none["spare"] is not None or none["problems"] != ["server 1 XPU 0 died and no spare can take its place (none left)"]:
        fail(f"the third death: spare {none['spare']}, problems {none['problems']}")
    # Bad --fail values: exit 2, the value named, nothing started or written.
    for value, message in (("2.1", "--fail 2.1: server 2 is not one of the rack's 2 (0-1)"),
                           ("0.9", "--fail 0.9: a server has XPUs 0-4"),
                           ("1.x", "--fail '1.x' is not SERVER.XPU")):
        bad_out = out + "-bad"
        shutil.rmtree(bad_out, ignore_errors=True)
        p = subprocess.run([mxtb, "rack-failover", "--scenario", scenario, "--out", bad_out, "--fail", value],
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 2 or message not in p.stderr:
            fail(f"--fail {value}: exit {p.returncode}, want 2 and '{message}'\n{p.stderr}")
        if Path(bad_out).exists():
            fail(f"--fail {value}: {bad_out} was written")


def failover_job(mxtb, out, racks):
    """The tenant's job in a rack: each failover ends at the job's first verified collective on the
    ring with the spare, the collective in flight at the failure aborted, none wrong; a 16-rank job
    over four servers (JOB_RANKS); the job's flags refused without --job."""
    # (--ranks, the rank processes' re-form on the path, is the demo's rack rows': integration_demo.)
    cases = (("rack-2x1.json", "0.1,0.2", [], 8, [("0.1", 4, 1), ("0.2", 9, 2)]),
             ("rack-2x2.json", "1.2", ["--job-op", "reduce_scatter", "--job-type", "bfloat16", "--job-bytes", "16384"], 16,
              [("1.2", 9, 7)]))
    for rack, deaths, flags, ranks, want in cases:
        run_out = f"{out}-{rack[:-5]}"
        shutil.rmtree(run_out, ignore_errors=True)
        p = subprocess.run([mxtb, "rack-failover", "--scenario", str(Path(racks, rack)), "--out", run_out, "--fail", deaths, "--job"] + flags,
                           capture_output=True, text=True, timeout=600)
        print(p.stdout)
        if p.returncode != 0:
            fail(f"{rack}: mxtb rack-failover --job: exit {p.returncode}, want 0\n{p.stderr}")
        recs = json.loads(Path(run_out, "rack-failover.json").read_text())["failovers"]
        if len(recs) != len(want):
            fail(f"{rack}: {len(recs)} failovers, want {len(want)}")
        for rec, (dead, spare_rack_xpu, dead_rack_xpu) in zip(recs, want):
            job = rec["job"]
            if rec["failed"] != dead or rec["outcome"] != "committed" or rec["problems"] or job is None:
                fail(f"{rack} {dead}: failed {rec['failed']}, {rec['outcome']}, problems {rec['problems']}, job {job}")
            if len(job["ring"]) != ranks or spare_rack_xpu not in job["ring"] or dead_rack_xpu in job["ring"]:
                fail(f"{rack} {dead}: the job formed again on {job['ring']}: want {ranks} ranks with {spare_rack_xpu}, without {dead_rack_xpu}")
            if job["collectives_wrong"] != 0 or job["collectives_aborted"] < 1 or "Aborted" not in job["in_flight"]:
                fail(f"{rack} {dead}: {job['collectives_wrong']} wrong, {job['collectives_aborted']} aborted, in flight '{job['in_flight']}'")
            if not (job["first_collective_ns"] or 0) > 0 or not rec["total_ns"] > rec["placed_ns"] > rec["detect_ns"] > 0:
                fail(f"{rack} {dead}: first collective {job['first_collective_ns']} ns, total {rec['total_ns']}, "
                     f"placed {rec['placed_ns']}, detected {rec['detect_ns']}")
            reform = job["communicator_reform"]
            if ("--ranks" in flags) != (reform is not None):
                fail(f"{rack} {dead}: ranks {'--ranks' in flags}, communicator_reform {reform}")
            reform_ns = 0
            if reform is not None:  # the rank processes (Gloo) formed again on the ring with the spare, checked
                if reform["ranks"] != ranks or reform["wrong"] != 0 or not reform["total_ns"] > 0:
                    fail(f"{rack} {dead}: the ranks' re-form {reform}")
                reform_ns = reform["total_ns"]
            if rack == "rack-2x2.json" and rec["blast_radius"]["xpus_left_active_outside_circuits"]:
                # A spare in the failing server: only the dead XPU's circuits' ends leave Active
                # (its mesh has room to route around every circuit that stays).
                fail(f"{rack} {dead}: XPUs outside the dead XPU's circuits left Active: "
                     f"{rec['blast_radius']['xpus_left_active_outside_circuits']}")
            if abs(rec["total_ns"] - (job["formed_ns"] + job["first_collective_ns"] + reform_ns)) > 1:
                fail(f"{rack} {dead}: the path ({rec['total_ns']} ns) does not end at the first verified collective")
    for flags, message in ((["--job-op", "alltoall"], "--job-op describes the tenant's job: add --job"),
                           (["--ranks"], "--ranks describes the tenant's job: add --job"),
                           (["--job", "--job-op", "max"], "--job-op")):
        bad_out = out + "-bad"
        shutil.rmtree(bad_out, ignore_errors=True)
        p = subprocess.run([mxtb, "rack-failover", "--scenario", str(Path(racks, "rack-2x1.json")), "--out", bad_out, "--fail", "0.1"] + flags,
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 2 or message not in p.stderr or Path(bad_out).exists():
            fail(f"{flags}: exit {p.returncode}, want 2 and '{message}', nothing written\n{p.stderr}")


def migrate(mxtb, out, racks):
    """The migration baseline beside Morphlux (--migrate): the same death on the same rack, Morphlux's
    spare against the slice moved to a free block of the static torus, every rank relaunched there
    (Gloo processes); the rack's circuits untouched by the baseline; bad --slice values refused."""
    shutil.rmtree(out, ignore_errors=True)
    rack = str(Path(racks, "rack-2x1.json"))
    p = subprocess.run([mxtb, "rack-failover", "--scenario", rack, "--out", out, "--migrate", "--fail", "0.1", "--job", "--ranks"],
                       capture_output=True, text=True, timeout=600)
    print(p.stdout)
    if p.returncode != 0:
        fail(f"mxtb rack-failover --migrate: exit {p.returncode}, want 0\n{p.stderr}")
    morphlux, moved = json.loads(Path(out, "rack-failover.json").read_text())["failovers"]
    if morphlux["outcome"] != "committed" or morphlux["spare"] != "0.4" or morphlux["problems"]:
        fail(f"Morphlux: {morphlux['outcome']}, spare {morphlux['spare']}, problems {morphlux['problems']}")
    if moved.get("baseline") != "migration" or moved["outcome"] != "migrated" or moved["problems"]:
        fail(f"migration: {moved.get('baseline')}, {moved['outcome']}, problems {moved['problems']}")
    # The slice (server 0's four XPUs) moves to server 1's: the nearest free 2x2 block.
    if moved["to"] != {"x0": 2, "y0": 0, "dim_x": 2, "dim_y": 2}:
        fail(f"the slice moved to {moved['to']}, want server 1's block (2x2 at 2,0)")
    job, blast = moved["job"], moved["blast_radius"]
    if sorted(job["ring"]) != [5, 6, 7, 8] or job["collectives_wrong"] != 0 or not (job["first_collective_ns"] or 0) > 0:
        fail(f"migration: the job on {job['ring']}, {job['collectives_wrong']} wrong, first collective {job['first_collective_ns']}")
    relaunch = job["communicator_reform"]
    if relaunch is None or relaunch["restart"] != "relaunch" or relaunch["ranks"] != 4 or relaunch["wrong"] != 0 \
            or not relaunch["start_ns"] > 0:
        fail(f"migration: every rank relaunched with its checkpoint, want a relaunch of 4 ranks: {relaunch}")
    if morphlux["job"]["communicator_reform"]["restart"] != "hot-spare":
        fail(f"Morphlux: the ranks' re-form {morphlux['job']['communicator_reform']}, want the hot spare's")
    if blast["boards_touched"] != [0, 1] or blast["ranks_relaunched"] != 4 or blast["words_lost"] != 0:
        fail(f"migration: boards {blast['boards_touched']}, {blast['ranks_relaunched']} ranks relaunched, {blast['words_lost']} lost")
    # Only the dead XPU's own lanes and its torus neighbours' lanes to it leave Active: no circuit moved.
    if blast["xpus_left_active_outside_circuits"] or "0.1" not in blast["xpus_left_active"]:
        fail(f"migration: XPUs whose links left Active {blast['xpus_left_active']}")
    # The state: 4 GiB a rank, one route a rank, the busiest link carrying one: 4 GiB at 10 Gb/s.
    if moved["state"]["max_link_flows"] != 1 or abs(moved["state"]["ns"] - (4 << 30) * 8 / 10) > 1:
        fail(f"migration: the state's move {moved['state']}")
    if abs(morphlux["state"]["ns"] - (4 << 30) * 8 / 40) > 1:
        fail(f"Morphlux: the state into the spare {morphlux['state']}")
    if not moved["total_ns"] > relaunch["total_ns"] > 0:
        fail(f"migration: the path {moved['total_ns']} ns does not hold the relaunch {relaunch['total_ns']} ns")
    if "migration against Morphlux" not in p.stdout:
        fail("no ratio line")
    for flags, message in ((["--slice", "2x2"], "--slice describes the migration baseline: add --migrate"),
                           (["--migrate"], "--migrate ends each path at the job's first verified collective: add --job"),
                           (["--migrate", "--job", "--slice", "2by2"], "--slice '2by2' is not WxH or WxH@X,Y"),
                           (["--migrate", "--job", "--slice", "4x1"], "--slice 4x1@0,0: as Morphlux's tenant, a torus with a side of 1"),
                           (["--migrate", "--job", "--slice", "5x2"], "the 5x2 block at (0, 0): the static torus is 4x2"),
                           (["--migrate", "--job", "--slice", "3x1"], "3x1 block at (0, 0): its ring steps from block position 2 to 0"),
                           (["--migrate", "--job", "--slice", "2x2@2,0"], "--fail 0.1: not an XPU of the slice 2x2@2,0"),
                           (["--migrate", "--job", "--slice", "2x2@4,0"], "the corner (4, 0) is outside the static 4x2 torus")):
        bad_out = out + "-bad"
        shutil.rmtree(bad_out, ignore_errors=True)
        p = subprocess.run([mxtb, "rack-failover", "--scenario", rack, "--out", bad_out, "--fail", "0.1"] + flags,
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 2 or message not in p.stderr or Path(bad_out).exists():
            fail(f"{flags}: exit {p.returncode}, want 2 and '{message}', nothing written\n{p.stderr}")


def tenants(mxtb, out, racks):
    """Several tenants placed by the allocator (--tenants), each running its own job: two deaths in
    tenant 0, one a server, each failed over to a spare of its own server; the other tenant's job
    verifies after each path with no collective aborted or wrong, and none of its XPUs' links leaves
    Active. Bad uses refused: exit 2, the message, nothing written."""
    rack = str(Path(racks, "rack-2x2.json"))

    def bad_use(flags, message, scenario=rack):
        bad_out = out + "-bad"
        shutil.rmtree(bad_out, ignore_errors=True)
        p = subprocess.run([mxtb, "rack-failover", "--scenario", scenario, "--out", bad_out] + flags, capture_output=True, text=True,
                           timeout=120)
        if p.returncode != 2 or message not in p.stderr or Path(bad_out).exists():
            fail(f"{flags}: exit {p.returncode}, want 2 and '{message}', nothing written\n{p.stderr}")
        return p

    # Where the allocator puts tenant 0: named by the refusal of an XPU outside it.
    p = bad_use(["--tenants", "4x2,2x2", "--fail", "0.4", "--job"], "--fail 0.4: not an XPU of tenant 0")
    placed = re.search(r"the allocator placed it on ([0-9.,]+)\)", p.stderr).group(1).split(",")
    deaths = []
    for x in placed:
        if x.split(".")[0] not in [d.split(".")[0] for d in deaths]:
            deaths.append(x)
    deaths = deaths[:2]
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([mxtb, "rack-failover", "--scenario", rack, "--out", out, "--tenants", "4x2,2x2", "--fail", ",".join(deaths), "--job"],
                       capture_output=True, text=True, timeout=600)
    print(p.stdout)
    if p.returncode != 0:
        fail(f"mxtb rack-failover --tenants: exit {p.returncode}, want 0\n{p.stderr}")
    scenario = json.loads(Path(out, "scenario.json").read_text())
    if len(scenario["tenants"]) != 2 or "tenant" in scenario:
        fail(f"the served rack file's tenants: {scenario.get('tenants')}")
    other = {f"{s}.{x}" for s, x in scenario["tenants"][1]["xpus"]}
    if other & {f"{s}.{x}" for s, x in scenario["tenants"][0]["xpus"]}:
        fail("the allocator placed two tenants on one XPU")
    records = json.loads(Path(out, "rack-failover.json").read_text())["failovers"]
    if len(records) != 2:
        fail(f"{len(records)} failovers, want 2")
    for r in records:
        if r["outcome"] != "committed" or r["problems"]:
            fail(f"{r['failed']}: {r['outcome']}, problems {r['problems']}")
        jobs = r["other_tenants_jobs"]
        if len(jobs) != 1 or jobs[0]["tenant"] != 1 or jobs[0]["aborted"] or jobs[0]["wrong"] \
                or not jobs[0]["verified"] > 0 or jobs[0]["next_verified_after_failure_ns"] is None:
            fail(f"{r['failed']}: the other tenant's job {jobs}")
        blast = r["blast_radius"]
        if blast["other_tenants_collectives_aborted"] != 0 or other & set(blast["xpus_left_active"]):
            fail(f"{r['failed']}: the other tenant disturbed: {blast}")
        if r["job"]["collectives_wrong"] != 0 or r["job"]["first_collective_ns"] is None:
            fail(f"{r['failed']}: the failing tenant's job {r['job']}")
    if "tenant 1's job:" not in p.stdout:
        fail("no line for the other tenant's job")
    bad_use(["--tenants", "2x2,4x1", "--fail", "0.0"], "--tenants 2x2,4x1: tenant 1 4x1: each side at least 2")
    bad_use(["--tenants", "2x2", "--fail", "0.0", "--migrate", "--job"], "--tenants: the migration baseline runs one slice")
    bad_use(["--tenants", "2x2,2x2,2x2", "--fail", "0.0"], "tenant 2 (2x2): the allocator found no place for it",
            scenario=str(Path(racks, "rack-2x1.json")))
    bad_use(["--tenants", "2x2", "--fail", "0.0"], "a rack of 4x4 servers: the allocator places tenants on one layer",
            scenario=str(Path(racks, "rack-4x4.json")))
    print("ok: the other tenant's job untouched by two failovers; 5 bad uses refused")


def main():
    mxtb, out, what = sys.argv[1], sys.argv[2], sys.argv[3]
    rest = sys.argv[4:]
    if what == "smoke":
        smoke(mxtb, out, rest[0])
    elif what in ("same", "same-waves"):
        sep = rest.index("--")
        same(mxtb, out, rest[0], rest[1:sep], rest[sep + 1:], waves=what == "same-waves")
    elif what == "faults":
        faults(mxtb, out, rest[0])
    elif what == "bad":
        bad(mxtb, out, rest[0])
    elif what == "kill":
        kill(mxtb, out, rest[0])
    elif what == "mismatch":
        mismatch(mxtb, out, rest[0])
    elif what == "collective":
        collective(mxtb, out, rest[0])
    elif what == "failover":
        failover(mxtb, out, rest[0])
    elif what == "failover-job":
        failover_job(mxtb, out, rest[0])
    elif what == "migrate":
        migrate(mxtb, out, rest[0])
    elif what == "tenants":
        tenants(mxtb, out, rest[0])
    else:
        fail(f"unknown check {what}")


if __name__ == "__main__":
    main()
