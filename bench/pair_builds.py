#!/usr/bin/env python3
"""Paired whole-process comparison of two Praxis builds.

    python3 bench/pair_builds.py NEW_BIN_DIR OLD_BIN_DIR

Each build gets a user-mode praxisd of its own in scratch XDG dirs (started
by its own praxis-run); `praxis-run -- /bin/true` of each then runs in
alternating order, back to back and spaced 100 ms and 1 s apart, and the
medians are compared. Both daemons are stopped at the end.
"""
import os, subprocess, sys, tempfile, time, statistics
new, old = sys.argv[1], sys.argv[2]
def env_for(d):
    e = dict(os.environ)
    for k in ("PRAXIS_SOCKET", "PRAXIS_SESSION", "PRAXIS_RUNTIME"): e.pop(k, None)
    e.update(XDG_RUNTIME_DIR=f"{d}/run", XDG_STATE_HOME=f"{d}/state", XDG_CONFIG_HOME=f"{d}/config", PRAXIS_SYSTEM="0")
    for sub in ("run", "state", "config/praxis", "work"): os.makedirs(f"{d}/{sub}", exist_ok=True)
    return e
builds = {}
for name, bindir in (("new", new), ("old", old)):
    d = tempfile.mkdtemp(prefix=f"pair-{name}-")
    builds[name] = (f"{bindir}/praxis-run", f"{bindir}/praxis", env_for(d), f"{d}/work")
def run(name):
    exe, _, env, cwd = builds[name]
    t = time.perf_counter(); r = subprocess.run([exe, "--", "/bin/true"], env=env, cwd=cwd); dt = time.perf_counter() - t
    assert r.returncode == 0, (name, r.returncode)
    return dt * 1000
for name in builds: run(name); run(name)  # start daemons, warm up
for gap, rounds in ((0, 200), (0.1, 40), (1.0, 15)):
    s = {"new": [], "old": []}
    for i in range(rounds):
        for name in (("new", "old") if i % 2 == 0 else ("old", "new")):
            if gap: time.sleep(gap)
            s[name].append(run(name))
    mn, mo = statistics.median(s["new"]), statistics.median(s["old"])
    print(f"gap {gap*1000:.0f} ms, {rounds} paired rounds: new {mn:.2f} ms, old {mo:.2f} ms, added {mn-mo:+.2f} ms ({mn/mo:.2f}x)")
for name, (_, praxis, env, cwd) in builds.items():
    subprocess.run([praxis, "stop"], env=env, cwd=cwd, capture_output=True)
