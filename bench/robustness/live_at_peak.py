"""What is live at a run's peak, by what made it (bench/history/robustness-sweep.md,
"GRU"): to trace a prediction error to tensors, compare the
verification's peak with the recording at the moment the advisor names.

    python3 bench/robustness/live_at_peak.py trace.db RUN [--at NS] [--top N]
    python3 bench/robustness/live_at_peak.py trace.db RUN --before-steps OTHER_RUN

Groups are (the innermost range open at the allocation with its phase, the
step, 'kept' when never freed); '-' is no range. `--before-steps` compares
what was made before the first step and is live at each run's peak, by
size: memory that no plan touches but that differs between the runs (the
GRU's Python garbage, 10 x 103,792 B, freed only in the checkpointed run).
Reads the SQLite tables of docs/schema.md directly; host memory only.
"""
import argparse
import collections
import sqlite3


def allocations(db, run):
    return db.execute("SELECT alloc_ns, free_ns, bytes, range, step FROM allocations "
                      "WHERE run = ? AND device = -1", (run,)).fetchall()


def peak(rows):
    """(time, bytes) of the highest live bytes, frees first at one instant."""
    events = sorted([(a, 1, b) for a, _, b, _, _ in rows] + [(f, 0, -b) for _, f, b, _, _ in rows if f >= 0])
    live, best = 0, (0, 0)
    for i, (t, _, d) in enumerate(events):
        live += d
        if (i + 1 == len(events) or events[i + 1][0] != t) and live > best[1]:
            best = (t, live)
    return best


def live_at(rows, t):
    return [r for r in rows if r[0] <= t and (r[1] < 0 or r[1] > t)]


def first_step(db, run):
    return db.execute("SELECT min(start_ns) FROM steps WHERE run = ?", (run,)).fetchone()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("run", type=int)
    ap.add_argument("--at", type=int, help="a time (ns) instead of the run's peak")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--before-steps", type=int, metavar="OTHER_RUN")
    a = ap.parse_args()
    db = sqlite3.connect(a.trace)
    rows = allocations(db, a.run)
    t, _ = (a.at, 0) if a.at is not None else peak(rows)
    live = live_at(rows, t)
    print("run %d at %d: %d B live in %d allocations" % (a.run, t, sum(r[2] for r in live), len(live)))
    if a.before_steps is not None:
        other = allocations(db, a.before_steps)
        sizes = []
        for run, rs in ((a.run, live), (a.before_steps, live_at(other, peak(other)[0]))):
            start = first_step(db, run)
            sizes.append(collections.Counter(r[2] for r in rs if r[0] < start))
        diff = sorted(((k * (sizes[0][k] - sizes[1][k]), k, sizes[0][k], sizes[1][k])
                       for k in set(sizes[0]) | set(sizes[1]) if sizes[0][k] != sizes[1][k]), key=lambda d: -abs(d[0]))
        print("made before the first step, run %d less run %d: %d B" % (a.run, a.before_steps, sum(d[0] for d in diff)))
        for d in diff[:a.top]:
            print("  %+12d B: %d B x %d against x %d" % d)
        return
    names = {i: (n, p) for i, n, p in db.execute("SELECT id, name, phase FROM ranges WHERE run = ?", (a.run,))}
    groups = collections.Counter()
    counts = collections.Counter()
    for alloc, free, size, rng, step in live:
        name, phase = names.get(rng, ("-", 0))
        key = ("%s%s" % (name, {1: "/F", 2: "/B"}.get(phase, "")), step, "kept" if free < 0 else "")
        groups[key] += size
        counts[key] += 1
    for key, size in groups.most_common(a.top):
        print("%12d B %6d  %s step %d %s" % (size, counts[key], key[0], key[1], key[2]))


if __name__ == "__main__":
    main()
