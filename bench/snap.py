#!/usr/bin/env python3
"""A look at a running rtbench process, for the cost benchmarks (scale.sh, watch-cost.sh):
every thread's CPU time (ns, schedstat) with its name and policy, and the run time and count
of every BPF program it has attached (kernel.bpf_stats_enabled must be 1 for those to move).

    bench/snap.py PID > look.json
"""
import ctypes, json, os, struct, sys, time
pid = sys.argv[1]
threads = []
for tid in os.listdir(f"/proc/{pid}/task"):
    try:
        ns = int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])
        comm = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
        policy = int(open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()[38])
    except (OSError, IndexError, ValueError):
        continue
    threads.append({"tid": int(tid), "comm": comm, "policy": policy, "ns": ns})
# The programs' statistics, by id from the links the process holds (it keeps no program fd):
# a fd of each, opened with BPF_PROG_GET_FD_BY_ID, has them in its fdinfo.
BPF = {"x86_64": 321, "aarch64": 280}[os.uname().machine]
libc = ctypes.CDLL(None, use_errno=True)
def fdinfo(path):
    return dict((k, v.strip()) for k, v in (l.split(":", 1) for l in open(path).read().splitlines() if ":" in l))
progs = []
for fd in os.listdir(f"/proc/{pid}/fd"):
    try:
        if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf_link":
            continue
        prog_id = int(fdinfo(f"/proc/{pid}/fdinfo/{fd}")["prog_id"])
    except (OSError, KeyError, ValueError):
        continue
    attr = ctypes.create_string_buffer(struct.pack("III", prog_id, 0, 0), 16)
    own = libc.syscall(BPF, 13, attr, 16)  # BPF_PROG_GET_FD_BY_ID
    if own < 0:
        continue
    info = fdinfo(f"/proc/self/fdinfo/{own}")
    os.close(own)
    progs.append({"prog_id": prog_id, "run_time_ns": int(info["run_time_ns"]), "run_cnt": int(info["run_cnt"])})
json.dump({"t": time.monotonic(), "pid": int(pid), "threads": threads, "progs": progs}, sys.stdout)
