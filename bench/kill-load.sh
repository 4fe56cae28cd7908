#!/usr/bin/env bash
# Does a load outlive a SIGKILL of rtbench? TRIALS times (default 20): `rtbench timer -D 60s
# --load paper` runs, is killed with SIGKILL 5-8 s in (drawn per trial), and AFTER seconds later
# (default 1.5) every process that was rtbench's descendant at the kill is looked for again.
#
# A process that has ended but not been reaped yet (a zombie) holds nothing but its pid; it is
# reaped by whoever adopts it once rtbench is gone. A service manager (systemd, a container's
# init) adopts and reaps at once; this machine's pid 1 reaps in bursts seconds apart. So each
# trial is run twice over, as REAPER says:
#   REAPER=subreaper  this script adopts the orphans and reaps them at once, as systemd would
#   REAPER=init       the orphans go to pid 1, whatever it is
#   REAPER=both       (default) both, trial by trial
# A trial fails when a process is left running, or a zombie whose parent is one of rtbench's
# (rtbench did not reap its own). A zombie that pid 1 adopted and has not reaped yet is counted
# apart: only pid 1 can reap it. The last line reads `left at 1.5 s: N of T trials` (every mode
# together) so a script can hold it to the goal (0).
#
#   TRIALS=20 LOAD=paper AFTER=1.5 RTBENCH=target/release/rtbench bench/kill-load.sh
#
# Needs root (the load's cgroup, ping flood). Each trial's store is in a temporary directory.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RTBENCH=${RTBENCH:-$here/target/release/rtbench}
[ -x "$RTBENCH" ] || { echo "kill-load: $RTBENCH not found; run 'cargo build --release' first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$RTBENCH" "${TRIALS:-20}" "${LOAD:-paper}" "${AFTER:-1.5}" "${REAPER:-both}" "$tmp" <<'PY'
import ctypes, os, random, signal, subprocess, sys, time

rtbench, trials, load, after, reaper, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), sys.argv[5], sys.argv[6]
PR_SET_CHILD_SUBREAPER = 36
libc = ctypes.CDLL(None, use_errno=True)

def descendants(pid):
    out = []
    try:
        kids = " ".join(open(f"/proc/{pid}/task/{t}/children").read() for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return out
    for k in kids.split():
        out.append(int(k))
        out.extend(descendants(int(k)))
    return out

def described(pid):
    """(pid[state of parent comm], whether it is a zombie pid 1 has to reap), or None when gone."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
    return f"{pid}[{state} of {ppid} {comm}]", state == "Z" and ppid == "1"

def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return

modes = ["subreaper", "init"] if reaper == "both" else [reaper]
failed = {m: 0 for m in modes}
init_zombies = 0
for t in range(1, trials + 1):
    for mode in modes:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1 if mode == "subreaper" else 0, 0, 0, 0)
        p = subprocess.Popen([rtbench, "timer", "-D", "60s", "--load", load, "--db", f"{tmp}/{mode}{t}.db", "-q"],
                             stdout=subprocess.DEVNULL, stderr=open(f"{tmp}/{mode}{t}.err", "w"))
        wait_ms = random.randint(5000, 8000)
        time.sleep(wait_ms / 1000)
        tree = descendants(p.pid)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        until = time.monotonic() + after
        while time.monotonic() < until:
            if mode == "subreaper":
                reap()
            time.sleep(0.005)
        found = [d for d in map(described, tree) if d]
        left = [d for d, init_s in found if not init_s]
        init_s = [d for d, init_s in found if init_s]
        failed[mode] += bool(left)
        init_zombies += bool(init_s)
        said = "left " + " ".join(left) if left else "none left"
        if init_s:
            said += "; ended, awaiting pid 1's reaping: " + " ".join(init_s)
        print(f"trial {t} {mode:9} (killed at {wait_ms} ms, {len(tree)} processes): {said}", flush=True)
        # What a failed trial left ends before the next begins, so trials stay independent.
        time.sleep(3)
        reap()
for m in modes:
    print(f"{m}: left at {after} s in {failed[m]} of {trials} trials")
if "init" in modes:
    print(f"init: a zombie awaited pid 1 at {after} s in {init_zombies} of {trials} trials")
print(f"left at {after} s: {sum(failed.values())} of {trials * len(modes)} trials")
PY
