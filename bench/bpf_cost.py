"""The classification's BPF programs' own cost, as the kernel times it: what the bench scripts
that run `rtbench noise --classify` print beside its noise. Needs bpftool (scripts/setup.sh
--bench)."""
import json, shutil, subprocess, time

# Loaded in this order (src/instrument/classify/bpf.rs), so named by id where all attached.
NAMES = ["irq_handler_entry", "irq_handler_exit", "softirq_entry", "softirq_exit", "sched_switch",
         "local_timer_entry", "local_timer_exit", "reschedule_entry", "reschedule_exit", "call_function_entry",
         "call_function_exit", "call_function_single_entry", "call_function_single_exit", "irq_work_entry",
         "irq_work_exit"]
KNOB = "/proc/sys/kernel/bpf_stats_enabled"


def stats():
    out = subprocess.run(["bpftool", "prog", "show", "name", "rtbench_class", "--json"], capture_output=True,
                         text=True, check=True).stdout
    return {p["id"]: (p.get("run_cnt", 0), p.get("run_time_ns", 0)) for p in json.loads(out)}


def programs_cost(cmd, settle=4, span=8):
    """Runs `cmd` (a classified noise run lasting over settle + span seconds) with the kernel's
    BPF statistics on (put back after) and returns [(tracepoint, runs/s, ns/s)] over `span` s
    of its middle, all CPUs; None without bpftool. A program runs on every CPU and returns at
    once on one not measured, so the sum bounds what they take from the measured CPUs."""
    if not shutil.which("bpftool"):
        return None
    was = open(KNOB).read().strip()
    try:
        open(KNOB, "w").write("1")
        run = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(settle)
        before = stats()
        time.sleep(span)
        after = stats()
        run.wait()
    finally:
        open(KNOB, "w").write(was)
    ids = sorted(k for k in after if k in before)
    name = lambda i: NAMES[i] if len(ids) == len(NAMES) else "a program"
    return [(name(i), (after[k][0] - before[k][0]) / span, (after[k][1] - before[k][1]) / span)
            for i, k in enumerate(ids)]


def print_cost(rows, per_program=True):
    """The programs' runs and run time per second, the costliest first."""
    if rows is None:
        print("(no bpftool: the programs' own run time not measured; scripts/setup.sh --bench)")
        return
    runs, ns = sum(r for _, r, _ in rows), sum(t for _, _, t in rows)
    print(f"\nthe classification's {len(rows)} programs (kernel BPF statistics, all CPUs): {runs:.0f} runs/s, "
          f"{ns / max(runs, 1):.0f} ns per run, {ns / 1000:.1f} µs of run time per second")
    for name, r, t in sorted(rows, key=lambda x: -x[2]) if per_program else []:
        if r:
            print(f"  {name:28}{r:8.0f} runs/s {t / r:7.0f} ns per run {t / 1000:8.1f} µs/s")
