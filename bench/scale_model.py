"""bench/scale.sh's arithmetic: each stage's cost from the runs' snapshots and exports, and from
them how many CPUs at RATE one housekeeping CPU carries at <= 10 % (see scale.sh's header).

    python3 bench/scale_model.py DIR RECORD_NS RATE
"""

import json
import sys


def run(tmp, name, instrument):
    """One run's collector time a second by kind of thread, its rates and its BPF statistics."""
    a, b = (json.load(open(f"{tmp}/{name}.{i}.json")) for i in (0, 1))
    doc = json.load(open(f"{tmp}/{name}.json"))
    rec = doc["run"]["params"][instrument]
    if rec.get("skipped") or rec.get("records") is None:
        sys.exit(f"scale: the {name} run read no BPF records: {rec.get('skipped') or rec.get('source')}")
    secs = b["t"] - a["t"]
    duration = doc["run"]["params"]["duration_s"]
    before = {t["tid"]: t["ns"] for t in a["threads"]}

    def per_s(pick):
        return sum(t["ns"] - before.get(t["tid"], 0) for t in b["threads"] if pick(t)) / secs

    # The measuring threads (rtbench-0, …) run at FIFO or RR; the collector's do not.
    collector = lambda t: t["policy"] not in (1, 2)
    p0 = {p["prog_id"]: p for p in a["progs"]}
    runs = sum(p["run_cnt"] - p0[p["prog_id"]]["run_cnt"] for p in b["progs"] if p["prog_id"] in p0)
    bpf_ns = sum(p["run_time_ns"] - p0[p["prog_id"]]["run_time_ns"] for p in b["progs"] if p["prog_id"] in p0)
    return {
        "main": per_s(lambda t: t["tid"] == b["pid"]),
        "reader": per_s(lambda t: collector(t) and t["comm"].startswith("rtbench-")),
        "other": per_s(lambda t: collector(t) and t["tid"] != b["pid"] and not t["comm"].startswith("rtbench-")),
        "records": rec["records"] / duration,
        "samples": sum(t["count"] for t in doc["threads"]) / duration,
        "threads": len(doc["threads"]),
        "lost": rec["lost_events"],
        "transport": rec.get("transport"),
        "mode": rec.get("mode"),
        "aggregated": rec.get("aggregated"),
        "bpf_run": bpf_ns / max(runs, 1),
        "bpf_record": bpf_ns / max(rec["records"] / duration * secs, 1),
        "housekeeping": 0.0,
    }


def main():
    tmp, record_ns, rate = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    ps = run(tmp, "per-sample", "split")
    a, t16, slow = (run(tmp, n, "split") for n in ("agg-2x100", "agg-16x800", "agg-2x1000"))
    idle, busy = run(tmp, "classify-idle", "classify"), run(tmp, "classify-busy", "classify")
    for r in (ps, a, t16, slow, idle, busy):
        r["housekeeping"] = r["main"] + r["reader"] + r["other"]

    print("\nrun                     threads  samples/s  records/s  lost  main ms/s  reader ms/s  other ms/s")
    names = ["split per-sample 2×100µs", "aggregate 2×100µs", "aggregate 16×800µs", "aggregate 2×1000µs",
             "classify, idle CPU", "classify, preempted"]
    for label, r in zip(names, (ps, a, t16, slow, idle, busy)):
        print(f"{label:<24}{r['threads']:>7}  {r['samples']:>9.0f}  {r['records']:>9.0f}  {r['lost']:>4}"
              f"  {r['main'] / 1e6:>9.2f}  {r['reader'] / 1e6:>11.2f}  {r['other'] / 1e6:>10.2f}")
    print(f"(transport {a['transport']}; aggregate runs counted {a['aggregated']} samples in the kernel)")

    # Per thread: 16 threads against 2 at the same sample rate.
    thread = (t16["main"] - a["main"]) / (t16["threads"] - a["threads"])
    # Per sample: the main thread at 20 000 against 2 000 samples/s on the same 2 threads, and
    # the reader's cost of a record (from the per-sample run) for the share of samples that
    # still come as records. Aggregated, the reader's time is its polling, a fixed cost: its
    # difference between the two runs is noise (a few ms/s either way on a loaded machine).
    per_record = ps["reader"] / ps["records"]
    main_sample = max(0.0, (a["main"] - slow["main"]) / (a["samples"] - slow["samples"]))
    sample = main_sample + a["records"] / a["samples"] * per_record
    fixed_split = slow["housekeeping"] - slow["threads"] * thread - slow["samples"] * sample
    ps_sample = main_sample + per_record
    # Per event and per gap: the preempted CPU against the idle one. Its gaps are a FIFO task's
    # (named with pid and policy), dearer than the idle CPU's interrupts: on the safe side.
    event = (busy["reader"] - idle["reader"]) / (busy["records"] - idle["records"])
    gap = (busy["main"] - idle["main"]) / max(busy["samples"] - idle["samples"], 1)
    fixed_classify = idle["housekeeping"] - idle["records"] * event - idle["samples"] * gap - thread
    e, g = idle["records"], idle["samples"]

    print("\nstage                                          cost        from")
    print(f"probe's record (measured CPU)              {record_ns:>9.1f} ns   cargo bench --bench record")
    print(f"split BPF program per run (measured CPU)   {a['bpf_run']:>9.1f} ns   kernel BPF statistics")
    print(f"classify BPF program per run (measured CPU){idle['bpf_run']:>9.1f} ns   kernel BPF statistics")
    print(f"split main thread, per sample              {main_sample:>9.1f} ns   ({a['main']:.0f} - "
          f"{slow['main']:.0f}) / ({a['samples']:.0f} - {slow['samples']:.0f})")
    print(f"split reader, per record                   {per_record:>9.1f} ns   {ps['reader']:.0f} / "
          f"{ps['records']:.0f} (per-sample run)")
    print(f"split, per sample (aggregate)              {sample:>9.1f} ns   main + {a['records'] / a['samples']:.4f}"
          f" records a sample × reader")
    print(f"split, per sample (per-sample mode)        {ps_sample:>9.1f} ns   for comparison: a record each")
    print(f"main thread, per measured thread a second  {thread / 1e3:>9.1f} µs   ({t16['main']:.0f} - "
          f"{a['main']:.0f}) / {t16['threads'] - a['threads']}")
    print(f"classify reader, per record                {event:>9.1f} ns   ({busy['reader']:.0f} - "
          f"{idle['reader']:.0f}) / ({busy['records']:.0f} - {idle['records']:.0f})")
    print(f"classify main thread, per gap              {gap:>9.1f} ns   ({busy['main']:.0f} - "
          f"{idle['main']:.0f}) / ({busy['samples']:.0f} - {idle['samples']:.0f})")
    print(f"fixed a second: split run, classify run    {fixed_split / 1e6:>5.2f} + {fixed_classify / 1e6:.2f} ms")

    fixed = fixed_split + fixed_classify
    load = rate * sample + thread + e * event + g * gap
    n = int((1e8 - fixed) // load)
    print(f"\nper measured CPU at {rate} Hz, {e:.0f} classification events and {g:.0f} gaps a second "
          f"(an idle busy CPU here):")
    print(f"  L = {rate} × {sample:.1f} + {thread:.0f} + {e:.0f} × {event:.1f} + {g:.0f} × {gap:.1f}"
          f" = {load:.0f} ns a second")
    print(f"CPUs one housekeeping CPU carries at ≤ 10 %: n = floor((1e8 - {fixed:.0f}) / {load:.0f}) = {n}")
    print(f"sustained: {n * rate} samples/s at {(n * load + fixed) / 1e7:.1f} % of one CPU")


if __name__ == "__main__":
    main()
