#!/usr/bin/env python3
"""gcprof's verified plans against what users would otherwise run, side by
side, at budgets between `every`'s peak and no checkpointing.

    python3 bench/plan/peers_bench.py BUILD [--small] [--jobs gpt,gpt2] [--rounds 3]
                                      [--fractions 0.2,0.4,0.6,0.8] [--compile-values 0.1,0.3,0.5,0.7]
                                      [--headroom H] [--out DIR]

Jobs (peer_job.py): the Megatron-style GPT of the python sample, 8 layers,
and Hugging Face GPT-2, 6 layers; 256 wide, seq 256, batch 8 (`--small`: 4
layers, 128 wide, seq 128, batch 4, and two compile values, for a run of
minutes on a shared machine). Per job:

1. `gcprof record --ops` of the job without checkpointing; `advise
   --strategy every` predicts every's peak; budget B = every + f x (recorded
   - every) for each fraction f.
2. gcprof: `advise --budget B` (defaults: headroom, units, strategy), then
   `verify`: measured peak and verdict. `--headroom H` passes H to advise:
   with `0` gcprof's plan may use the whole budget, as the peers do (a peer
   fits when its one measured run does; gcprof's plan when its verification
   run does).
3. Peers, as their users call them (peer_rules.py, peer_milp.py): every 2nd
   and every 3rd block under torch.utils.checkpoint; torchtitan's per-block
   selective rule; torch.compile with each activation_memory_budget value
   (a user sweeps it: the best value that fits counts); PyTorch's SAC MILP
   solved for B (where it runs: the output says what it needed on a CPU).
   Each runs once under `gcprof record` (the same measuring stick: the host
   peak gcprof records); a peer fits B when that peak is at most B
   and it trains the same (its losses are no checkpointing's; torch.compile's
   kernels are other ones and are not compared).
4. gcprof for the job as its user compiles it (peer_job.py `--peer
   compile`: torch.compile as it comes, activation_memory_budget 1.0),
   recorded into the same trace: per budget, `gcprof verify TRACE
   --compile-budgets VALUES --budget B --plan <gcprof's plan for B> --json`,
   as a user would call it: it runs each value once, and the eager plan,
   and names the fastest that fits (one wall-clock run each). Its answer is
   one of the configurations the rounds time (a compile:V peer or gcprof's
   plan), and is judged by that configuration's ratio. This costs one
   compiled run per value and one eager run per budget (torch.compile on a
   CPU compiles for tens of seconds): give only the --fractions you need.
5. Step time: ROUNDS rounds; in each, the job without checkpointing, then
   every configuration (and a second run without checkpointing, the
   control: its spread is the noise) in a shuffled order, each under
   step_clock.py (process CPU time per step, one intra-op thread, first step
   dropped). A configuration's ratio is the median over rounds of its
   median step / the same round's no-checkpoint median step.

Prints Markdown tables: the peers' peaks and ratios; per budget what
`verify --compile-budgets` measured in its one run each; then per budget
gcprof's answer for the eager job (its verified plan) and for the compiled
job (the configuration verify names) against the fastest peer that fits.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from selective_bench import ENV, clocked, gcprof  # noqa: E402

JOB = os.path.join(HERE, "peer_job.py")
MILP = os.path.join(HERE, "peer_milp.py")
FULL = {"gpt": ["--layers", "8"], "gpt2": ["--layers", "6"], "*": ["--hidden", "256", "--seq", "256", "--batch", "8"]}
SMALL = {"gpt": ["--layers", "4"], "gpt2": ["--layers", "4"], "*": ["--hidden", "128", "--seq", "128", "--batch", "4"]}
STATIC_PEERS = ["every:2", "every:3", "titan"]


def mib(b):
    return "%.1f" % (b / 2**20)


def load():
    return "load %.1f" % os.getloadavg()[0]


def recorded_peak(build, db, argv):
    if os.path.exists(db):
        os.remove(db)
    subprocess.run([os.path.join(build, "bin", "gcprof"), "record", "-o", db, "--", sys.executable, *argv],
                   env=ENV, capture_output=True)
    runs = json.loads(gcprof(build, "show", db, "--json").stdout)["runs"]
    if runs[-1]["exit_code"] != 0:
        sys.exit("peers_bench: %s failed under gcprof record (trace %s)" % (" ".join(argv), db))
    return runs[-1]["peak_bytes"], [x["value"] for x in runs[-1]["losses"]]


class Contender:
    """One configuration: its peak, whether it fits, how to run it for time."""

    def __init__(self, label, prefix, argv, peak, verdict=None, losses=None):
        self.label, self.prefix, self.argv, self.peak, self.verdict = label, prefix, argv, peak, verdict
        self.losses = losses
        self.trains_same = True
        self.ratios = []

    def ratio(self):
        return statistics.median(self.ratios)

    def spread(self):
        return "%.3f-%.3f" % (min(self.ratios), max(self.ratios))


def gcprof_plans(build, db, job, budgets, headroom, work):
    """Per budget: gcprof's verified plan as a Contender, or None when advise refuses."""
    plans = []
    for i, budget in enumerate(budgets):
        path = os.path.join(work, "gcprof-%d.json" % i)
        advised = gcprof(build, "advise", db, "--budget", "%dB" % budget, "-o", path,
                         *(["--headroom", headroom] if headroom is not None else []))
        if advised.returncode != 0:
            print("  gcprof at %s MiB: advise refused (%s)" % (mib(budget), advised.stderr.strip()[-160:]))
            plans.append(None)
            continue
        gcprof(build, "verify", db, "--plan", path)
        rep = json.loads(gcprof(build, "report", db, "--format", "json").stdout)
        c = Contender("gcprof %s MiB" % mib(budget), [os.path.join(build, "bin", "gcprof"), "apply", path, "--"],
                      job, rep["measured"]["peak_bytes"], rep["verdict"])
        c.predicted = rep["predicted"]["peak_bytes"]
        c.path = path
        plans.append(c)
    return plans


def compiled_answers(build, db, job, budgets, plans, compile_values):
    """Per budget: `verify --compile-budgets --json` on the job as its user
    compiles it, recorded into the eager job's trace (where gcprof's plans
    were advised, so that --plan verifies them as they are)."""
    gcprof(build, "record", "-o", db, "--", sys.executable, *job, "--peer", "compile")
    if json.loads(gcprof(build, "show", db, "--json").stdout)["runs"][-1]["exit_code"] != 0:
        sys.exit("peers_bench: the compiled job failed under gcprof record (trace %s)" % db)
    values = ",".join("%g" % v for v in compile_values)
    answers = []
    for budget, plan in zip(budgets, plans):
        out = gcprof(build, "verify", db, "--compile-budgets", values, "--budget", "%dB" % budget, "--json",
                     *(["--plan", plan.path] if plan else []))
        try:
            answer = json.loads(out.stdout)
        except ValueError:
            sys.exit("peers_bench: verify --compile-budgets --json printed no JSON\n%s" % out.stderr[-2000:])
        print("  verify --compile-budgets at %s MiB names %s (%s)" % (mib(budget), named_text(answer), load()),
              flush=True)
        answers.append(answer)
    return answers


def named_text(answer):
    f = answer["fastest"]
    if not f:
        return "none"
    return "gcprof's eager plan" if f["what"] == "eager_plan" else "compile %g" % f["activation_memory_budget"]


def not_counted(value):
    """Why verify does not count a value's run."""
    if value["exit_code"] != 0:
        return "exited %d" % value["exit_code"]
    if not value["applied"]:
        return "not compiled with the value"
    return "losses differ" if not value["losses"]["passed"] else "no steps"


def named_contender(answer, plan, peers):
    """The configuration the rounds time that verify named, or None."""
    f = answer["fastest"]
    if not f:
        return None
    if f["what"] == "eager_plan":
        return plan
    return next(c for c in peers if c.label == "compile:%g" % f["activation_memory_budget"])


def milp_plans(build, job, budgets, plain_peak, work):
    plans = []
    for i, budget in enumerate(budgets):
        path = os.path.join(work, "milp-%d.json" % i)
        p = subprocess.run([sys.executable, MILP, "solve", *job[1:], "--budget", str(budget),
                            "--plain-peak", str(plain_peak), "-o", path], env=ENV, capture_output=True, text=True)
        if p.returncode != 0:
            print("  MILP at %s MiB: did not run (%s)" % (mib(budget), p.stderr.strip().splitlines()[-1][:200]))
            plans.append(None)
            continue
        with open(path) as f:
            solved = json.load(f)
        if i == 0:
            print("  MILP: " + "; ".join(solved["notes"][:1]))
        print("  MILP at %s MiB: %s" % (mib(budget), "; ".join(solved["notes"][1:])
                                        + ("; infeasible" if not solved["feasible"] else "")
                                        + "; blocks %s" % ", ".join("%s discards %.2f" % (k, v["discard"])
                                                                    for k, v in solved["modules"].items())))
        argv = [*job, "--peer", "milp:" + path]
        peak, losses = recorded_peak(build, os.path.join(work, "milp-%d.db" % i), argv)
        plans.append(Contender("MILP %s MiB" % mib(budget), [], argv, peak, losses=losses))
    return plans


def time_rounds(contenders, job, rounds, work):
    """Fills each contender's per-round ratios to that round's no-checkpoint step."""
    def median_step(prefix, argv, out):
        return statistics.median(clocked(prefix, argv, out))
    rng = random.Random(0)
    for r in range(rounds):
        order = list(range(-1, len(contenders)))  # -1: the job without checkpointing
        rng.shuffle(order)
        steps = {}
        for i in order:
            prefix, argv = (contenders[i].prefix, contenders[i].argv) if i >= 0 else ([], job)
            steps[i] = median_step(prefix, argv, os.path.join(work, "t-%d-%d.json" % (i, r)))
        for i, c in enumerate(contenders):
            c.ratios.append(steps[i] / steps[-1])
        print("  round %d of %d done (%s)" % (r + 1, rounds, load()), flush=True)


def bench(build, name, a, work):
    size = (SMALL if a.small else FULL)
    job = [JOB, "--model", name, *size[name], *size["*"], "--steps", str(a.steps)]
    print("\n### %s: %s (%s at start)\n" % (name, " ".join(job[1:]), load()), flush=True)
    db = os.path.join(work, name + ".db")
    if os.path.exists(db):
        os.remove(db)
    gcprof(build, "record", "-o", db, "--ops", "--", sys.executable, *job)
    every = json.loads(gcprof(build, "advise", db, "--strategy", "every", "--json", "--no-store").stdout)
    none_peak, every_peak = every["baseline"]["peak_bytes"], every["predicted"]["peak_bytes"]
    budgets = [int(every_peak + f * (none_peak - every_peak)) for f in a.fractions]
    print("  recorded peak %s MiB, every predicted %s MiB; budgets %s MiB" % (
        mib(none_peak), mib(every_peak), ", ".join(mib(b) for b in budgets)), flush=True)
    plans = gcprof_plans(build, db, job, budgets, a.headroom, work)
    plain_peak, plain_losses = recorded_peak(build, os.path.join(work, "none.db"), job)
    peers = [Contender("no checkpointing (control)", [], job, plain_peak, losses=plain_losses)]
    for peer in STATIC_PEERS + ["compile:%g" % v for v in a.compile_values]:
        argv = [*job, "--peer", peer]
        peak, losses = recorded_peak(build, os.path.join(work, peer + ".db"), argv)
        peers.append(Contender(peer, [], argv, peak, losses=losses))
    milps = milp_plans(build, job, budgets, plain_peak, work)
    for c in peers + milps:
        # Checkpointing recomputes what it dropped: the losses are the same;
        # torch.compile's kernels (and their dropout draws) are other ones.
        # A peer that trains something else does not count, whatever its peak.
        if c and c.losses != plain_losses and not c.label.startswith("compile"):
            print("  WARNING: %s's losses %s differ from no checkpointing's %s: it does not count"
                  % (c.label, c.losses, plain_losses))
            c.trains_same = False
    answers = compiled_answers(build, db, job, budgets, plans, a.compile_values)
    time_rounds([c for c in plans + peers + milps if c], job, a.rounds, work)
    report(name, budgets, plans, peers, milps, answers)


def against(mine, best, noise):
    """Is `mine` (a Contender that fits) no slower than the fastest peer that fits?"""
    if not best or mine.ratio() <= best.ratio():
        return "yes" + (", by %.3f" % (best.ratio() - mine.ratio()) if best and best is not mine else "")
    diff = mine.ratio() - best.ratio()
    if diff <= noise:
        return "within noise: slower by %.3f (noise %.3f)" % (diff, noise)
    return "**NO: slower by %.3f** (noise %.3f)" % (diff, noise)


def report(name, budgets, plans, peers, milps, answers):
    control = peers[0]
    noise = max(abs(r - 1) for r in control.ratios)
    print("\n| %s peer | peak MiB | step / no-checkpoint step (median, range over rounds) |\n|---|---:|---|" % name)
    for c in peers:
        print("| %s | %s | %.3f (%s) |" % (c.label, mib(c.peak), c.ratio(), c.spread()))
    print("\nnoise: the control's ratios deviate from 1 by up to %.3f\n" % noise)
    print("`verify --compile-budgets --json`, one run each (peak MiB, fits, step ms; compiled: the median step "
          "after the first two):\n")
    print("| budget MiB | %s | eager plan | names |\n|---:|%s---|---|" % (
        " | ".join("compile %g" % v["activation_memory_budget"] for v in answers[0]["values"]),
        "---|" * len(answers[0]["values"])))
    for budget, answer in zip(budgets, answers):
        cells = ["%s, %s, %.0f%s" % (mib(v["peak_bytes"]), "fits" if v["fits"] else "over", v["step_ns"] / 1e6,
                                     "" if v["counts"] else " (does not count: %s)" % not_counted(v))
                 for v in answer["values"]]
        e = answer["eager_plan"]
        eager = ("%s, %s, %.0f" % (mib(e["peak_bytes"]), e["verdict"], e["step_ns"] / 1e6)) if e else "advise refused"
        print("| %s | %s | %s | %s |" % (mib(budget), " | ".join(cells), eager, named_text(answer)))
    print("\n| budget MiB | gcprof: predicted / measured MiB, verify, ratio | MILP: peak MiB, fits, ratio "
          "| fastest peer that fits (ratio) | eager job: gcprof's plan no slower? "
          "| compiled job: gcprof names, ratio | compiled job: no slower? |\n|---:|---|---|---|---|---|---|")
    for budget, plan, milp, answer in zip(budgets, plans, milps, answers):
        fitting = [c for c in peers[1:] + [milp] if c and c.peak <= budget and c.trains_same]
        best = min(fitting, key=Contender.ratio) if fitting else None
        g = ("%s / %s, %s, %.3f (%s)" % (mib(plan.predicted), mib(plan.peak), plan.verdict, plan.ratio(), plan.spread())
             if plan else "advise refused")
        m = ("%s, %s, %.3f" % (mib(milp.peak), "fits" if milp.peak <= budget else "OVER", milp.ratio())
             + ("" if milp.trains_same else ", losses differ: does not count")
             if milp else "did not run")
        b = "%s (%s MiB) %.3f" % (best.label, mib(best.peak), best.ratio()) if best else "none fits"
        eager = "NO: gcprof's plan does not fit" if not plan or plan.peak > budget else against(plan, best, noise)
        chosen = named_contender(answer, plan, peers)
        if not chosen:
            c, compiled = "none", ("NO: names none, %s fits" % best.label) if best else "yes: none fits"
        else:
            c = "%s, %.3f (%s)" % (named_text(answer), chosen.ratio(), chosen.spread())
            compiled = ("NO: its timed run peaks %s MiB, over" % mib(chosen.peak) if chosen.peak > budget
                        else against(chosen, best, noise))
        print("| %s | %s | %s | %s | %s | %s | %s |" % (mib(budget), g, m, b, eager, c, compiled), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--small", action="store_true", help="4 layers, 128 wide, seq 128, batch 4; two compile values")
    ap.add_argument("--jobs", default="gpt,gpt2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--fractions", default="0.2,0.4,0.6,0.8")
    ap.add_argument("--compile-values", default=None, help="activation_memory_budget values (default 0.1,0.3,0.5,0.7; "
                    "--small 0.3,0.6)")
    ap.add_argument("--headroom", help="advise's --headroom for gcprof's plans (default: advise's own rule)")
    ap.add_argument("--out", help="keep traces, plans and step times here (default: a temporary folder)")
    a = ap.parse_args()
    a.fractions = [float(f) for f in a.fractions.split(",")]
    a.compile_values = [float(v) for v in (a.compile_values or ("0.3,0.6" if a.small else "0.1,0.3,0.5,0.7")).split(",")]
    build = os.path.abspath(a.build)
    root = a.out or tempfile.mkdtemp(prefix="gcprof-peers-bench-")
    print("peers_bench: OMP_NUM_THREADS=1, %d rounds, %d steps per run (first dropped), gcprof's headroom %s, %s"
          % (a.rounds, a.steps, a.headroom if a.headroom is not None else "advise's default", load()), flush=True)
    for name in a.jobs.split(","):
        work = os.path.join(root, name)
        os.makedirs(work, exist_ok=True)
        bench(build, name, a, work)
    print("\n%s at the end" % load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
