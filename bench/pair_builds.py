#!/usr/bin/env python3
"""Paired whole-process comparison of two Praxis builds, interleaved.

    python3 bench/pair_builds.py NEW_BIN_DIR OLD_BIN_DIR

Each build gets a user-mode praxisd of its own in scratch XDG dirs and a
git workspace, both up at once, and is always driven by its own praxis-run.
Each round calls one build, then the other, their order alternating, and
every call is paired with its baseline at the same spacing: `sh -c /bin/true`
for `praxis-run -- /bin/true`, and `/bin/true` fed the same event for
`praxis-run hook claude-code` (git status, with a session). What is reported
per build is the overhead over that baseline: median, mean without the
highest and lowest tenth, and p90. Builds measured one after the other drift
with the host by more than a change of 0.1 ms; interleaved, both see the same
host. Both daemons are stopped and their scratch dirs removed at the end,
also when the run is interrupted or killed.

Environment:
    MODE=exec|hook    what is measured (default exec)
    SPACING=S:N,...   gaps in seconds before each call, with rounds each
                      (default 0:120,0.5:60,1:40)
"""
import json, os, shutil, signal, statistics, subprocess, sys, tempfile, time

new, old = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
mode = os.environ.get("MODE", "exec")
spacing = [tuple(float(x) for x in part.split(":")) for part in os.environ.get("SPACING", "0:120,0.5:60,1:40").split(",")]


def scratch(name, bindir):
    d = tempfile.mkdtemp(prefix=f"pair-{name}-")
    env = dict(os.environ)
    for k in ("PRAXIS_SOCKET", "PRAXIS_SESSION", "PRAXIS_RUNTIME"):
        env.pop(k, None)
    env.update(HOME=f"{d}/home", XDG_RUNTIME_DIR=f"{d}/run", XDG_STATE_HOME=f"{d}/state",
               XDG_CONFIG_HOME=f"{d}/config", PRAXIS_SYSTEM="0")
    for sub in ("home", "run", "state", "config/praxis", "work"):
        os.makedirs(f"{d}/{sub}", exist_ok=True)
    work = f"{d}/work"
    subprocess.run("git init -q && git -c user.name=b -c user.email=b@example.invalid commit -q --allow-empty -m i",
                   shell=True, cwd=work, env=env, check=True)
    event = f"{d}/event.json"
    with open(event, "w") as f:
        json.dump({"session_id": f"pair-{name}", "transcript_path": "/dev/null", "cwd": work,
                   "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                   "tool_input": {"command": "git status", "description": "Show working tree status"}}, f)
    return {"bin": bindir, "env": env, "work": work, "event": event, "dir": d}


def timed(build, argv, event):
    with open(build["event"] if event else os.devnull) as stdin:
        t = time.perf_counter()
        r = subprocess.run(argv, env=build["env"], cwd=build["work"], stdin=stdin,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        took = (time.perf_counter() - t) * 1000
    assert r.returncode == 0, (argv, r.returncode)
    return took


def overhead(build, gap):
    """One call and its baseline, each after `gap`; the difference in ms."""
    run = f"{build['bin']}/praxis-run"
    if mode == "hook":
        argv, base = [run, "hook", "claude-code"], ["/bin/true"]
    else:
        argv, base = [run, "--", "/bin/true"], ["sh", "-c", "/bin/true"]
    time.sleep(gap)
    praxis = timed(build, argv, mode == "hook")
    time.sleep(gap)
    return praxis - timed(build, base, mode == "hook")


# A TERM (a killed run) unwinds too, so both daemons are stopped and the
# scratch dirs removed however the run ends.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
builds = {"new": scratch("new", new), "old": scratch("old", old)}
try:
    for build in builds.values():  # start each daemon, warm up
        overhead(build, 0)
        overhead(build, 0)
    print(f"{mode}: overhead over the baseline, ms (median / trimmed mean / p90)")
    for gap, rounds in spacing:
        got = {name: [] for name in builds}
        for i in range(int(rounds)):
            for name in (("new", "old") if i % 2 == 0 else ("old", "new")):
                got[name].append(overhead(builds[name], gap))
        line = []
        for name, xs in got.items():
            xs.sort()
            tenth = len(xs) // 10
            trimmed = statistics.mean(xs[tenth:len(xs) - tenth])
            line.append(f"{name} {statistics.median(xs):.3f} / {trimmed:.3f} / {xs[int(len(xs) * 0.9) - 1]:.3f}")
        print(f"gap {gap:g} s, {int(rounds)} rounds: " + ", ".join(line))
finally:
    for build in builds.values():
        try:
            subprocess.run([f"{build['bin']}/praxis", "stop"], env=build["env"], cwd=build["work"], capture_output=True)
        except OSError as e:
            print(f"could not stop the daemon of {build['bin']}: {e}", file=sys.stderr)
        shutil.rmtree(build["dir"], ignore_errors=True)
