"""What the vs-rtla scripts share: a tool's A/A ratios and the spread a ratio between two tools
is judged by."""
import math


def aa(pairs, get):
    """The A/A ratios of one statistic: each round's second run over its first (runs whose first
    value is 0 or unknown give none)."""
    return [get(b) / get(a) for a, b in pairs if get(a) and math.isfinite(get(a))]


def judged(ratio, ours, theirs):
    """"0.75-1.33 in": the wider of two tools' A/A spreads, taken both ways, and whether ratio
    falls inside it. Which of a tool's two runs came first says nothing of which is the larger:
    a second run at 0.75x its first is as far from it as one at 1.33x, so a spread of A/A ratios
    0.75-1.00 is judged as 0.75-1.33 (the one-sided spread would call a ratio of 1.01 outside)."""
    reach = lambda v: max(abs(math.log(r)) for r in v if r > 0) if any(r > 0 for r in v) else 0
    far = math.exp(max(reach(ours), reach(theirs)))
    lo, hi = 1 / far, far
    return f"{f'{lo:.2f}-{hi:.2f}':>12}{'in' if lo <= ratio <= hi else 'OUT':>5}"


def interleaved(tools, rounds, said):
    """Runs every tool twice a round, the order reversed each round (A B B A, then B A A B), so
    each has a first and a second run to hold against itself; prints `said(tool, first)` for each
    after each round and returns {tool: [(first, second), ...]}."""
    runs = {t: [] for t in tools}
    for r in range(rounds):
        order = list(tools) if r % 2 == 0 else list(reversed(tools))
        first = {t: tools[t]() for t in order}
        for t in reversed(order):
            runs[t].append((first[t], tools[t]()))
        print(f"round {r + 1} of {rounds}: " + "; ".join(said(t, runs[t][-1][0]) for t in tools), flush=True)
    return runs
