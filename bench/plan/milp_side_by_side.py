#!/usr/bin/env python3
"""gcprof's verified plans from two builds (before / after a change) against
PyTorch's SAC MILP at the same budgets, timed side by side: a narrow cut of
peers_bench.py (its functions, its measuring stick) for one job.

    python3 bench/plan/milp_side_by_side.py --before BUILD --after BUILD [--job gpt2] [--small]
                                            [--fractions 0.2,0.4,0.6,0.8] [--rounds 3] --out DIR

One `record --ops` (with AFTER); each build advises and verifies on its own
copy of the trace; the MILP is solved and recorded as in peers_bench.py;
then ROUNDS shuffled rounds of every plan, the MILP's and the job without
checkpointing twice (the second is the control: its spread is the noise),
one intra-op thread, ratio = CPU time per step / the round's no-checkpoint
step (median over rounds, range).
"""
import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import peers_bench as pb  # noqa: E402
from selective_bench import gcprof  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--job", default="gpt2")
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--fractions", default="0.2,0.4,0.6,0.8")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    size = pb.SMALL if a.small else pb.FULL
    job = [pb.JOB, "--model", a.job, *size[a.job], *size["*"], "--steps", "5"]
    print("job: %s (%s)" % (" ".join(job[1:]), pb.load()), flush=True)
    db = os.path.join(a.out, "rec.db")
    if not os.path.exists(db):
        gcprof(a.after, "record", "-o", db, "--ops", "--", sys.executable, *job)
    every = json.loads(gcprof(a.after, "advise", db, "--strategy", "every", "--json", "--no-store").stdout)
    none_peak, every_peak = every["baseline"]["peak_bytes"], every["predicted"]["peak_bytes"]
    budgets = [int(every_peak + float(f) * (none_peak - every_peak)) for f in a.fractions.split(",")]
    print("recorded %s MiB, every %s MiB" % (pb.mib(none_peak), pb.mib(every_peak)), flush=True)
    plans = {}
    for name, build in (("before", a.before), ("after", a.after)):
        work = os.path.join(a.out, name)
        os.makedirs(work, exist_ok=True)
        copy = os.path.join(work, "rec.db")
        shutil.copy(db, copy)
        plans[name] = pb.gcprof_plans(build, copy, job, budgets, work)
    plain_peak, plain_losses = pb.recorded_peak(a.after, os.path.join(a.out, "none.db"), job)
    milps = pb.milp_plans(a.after, job, budgets, plain_peak, a.out)
    for budget, m in zip(budgets, milps):
        if m and m.losses != plain_losses:
            print("  MILP at %s MiB: losses %s differ from no checkpointing's %s" % (pb.mib(budget), m.losses,
                                                                                    plain_losses))
    control = pb.Contender("control", [], job, plain_peak)
    pb.time_rounds([c for c in plans["before"] + plans["after"] + milps + [control] if c], job, a.rounds, a.out)
    noise = max(abs(r - 1) for r in control.ratios)
    print("\nnoise: the control's ratios deviate from 1 by up to %.3f (%s)\n" % (noise, pb.load()))
    print("| budget MiB | gcprof before: predicted / measured MiB, verify, ratio | gcprof after: the same "
          "| SAC MILP: peak MiB, fits, ratio |\n|---:|---|---|---|")

    def cell(c):
        if not c:
            return "advise refused"
        return "%s / %s, %s, %.3f (%s)" % (pb.mib(c.predicted), pb.mib(c.peak), c.verdict, c.ratio(), c.spread())
    for i, budget in enumerate(budgets):
        m = milps[i]
        mc = ("%s, %s, %.3f (%s)" % (pb.mib(m.peak), "fits" if m.peak <= budget else "OVER", m.ratio(), m.spread())
              if m else "did not run")
        print("| %s | %s | %s | %s |" % (pb.mib(budget), cell(plans["before"][i]), cell(plans["after"][i]), mc),
              flush=True)


if __name__ == "__main__":
    main()
