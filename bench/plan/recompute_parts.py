#!/usr/bin/env python3
"""What a unit's recomputation costs next to its forward, in plain PyTorch
(no gcprof recording), in process CPU time (the slowdown bench).

    recompute_parts.py [--job sample|gpt2] [--rounds 3] [--steps 5]

Builds the job's model (the slowdown bench's configurations), then in
alternating rounds runs it three ways in this one process, one intra-op
thread: training steps as they are (baseline); training steps with every unit
checkpointed by gcprof's own wrapper (profiler/python/gcprof/runtime/checkpointing.py,
the one `GCPROF_PLAN` applies); and forwards under no_grad (what the units
cost without building a graph or keeping tensors). Medians per step, the
first step of each run left out: step CPU time; the units' forward CPU time;
the units' recomputation CPU time inside backward.
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "samples", "python"), os.path.join(ROOT, "tests", "e2e"),
                os.path.join(ROOT, "profiler", "python")]

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from gcprof.runtime import checkpointing  # noqa: E402

cpu = time.process_time_ns
spent = {"forward": 0, "recompute": 0}  # CPU ns inside the units this step


def sample_job():
    import train_gpt
    args = train_gpt.parse_args(["--layers", "8", "--hidden", "64", "--heads", "4", "--seq", "128",
                                 "--batch", "16", "--vocab", "256"])
    model = train_gpt.build_model(args)
    gen = train_gpt.data_generator(args)

    def loss_of():
        x, y = train_gpt.make_batch(args, gen)
        return F.cross_entropy(model(x).reshape(-1, args.vocab), y.reshape(-1))

    return model, list(model.layers), loss_of, torch.optim.AdamW(model.parameters(), lr=args.lr)


def gpt2_job():
    import public_model_job
    model, batch, loss_of, opt = public_model_job.gpt2()

    def step_loss():
        inputs, kwargs, target = batch()
        return loss_of(model, inputs, kwargs, target)

    return model, list(model.transformer.h), step_loss, opt


JOBS = {"sample": sample_job, "gpt2": gpt2_job}


def time_unit(unit):
    """Adds the CPU time of each call of unit's forward to `spent`: a call made
    while autograd runs a backward pass is a checkpoint's recomputation."""
    inner = unit.forward

    def forward(*args, **kwargs):
        kind = "recompute" if torch._C._current_graph_task_id() != -1 else "forward"
        start = cpu()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[kind] += cpu() - start

    unit.forward = forward


def run(job, mode, steps):
    torch.manual_seed(0)
    model, units, loss_of, opt = JOBS[job]()
    model.train()
    for k, unit in enumerate(units):
        time_unit(unit)  # inside the checkpoint: the recomputation re-enters it
        if mode == "checkpoint":
            checkpointing.checkpoint_module(torch, unit, "unit%d" % k)
    out = []
    for _ in range(steps):
        spent.update(forward=0, recompute=0)
        start = cpu()
        if mode == "nograd":
            with torch.no_grad():
                loss_of()
        else:
            loss = loss_of()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        out.append({"step": cpu() - start, **spent})
    return out[1:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--job", choices=sorted(JOBS), default="sample")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(1)
    modes = ("baseline", "checkpoint", "nograd")
    res = {m: [] for m in modes}
    for _ in range(a.rounds):
        for m in modes:
            res[m] += run(a.job, m, a.steps)
    med = {m: {k: statistics.median(s[k] for s in v) / 1e6 for k in v[0]} for m, v in res.items()}
    base = med["baseline"]
    print("%s, %d rounds x %d steps, CPU ms per step (medians); load average %.1f"
          % (a.job, a.rounds, a.steps - 1, os.getloadavg()[0]))
    for m in modes:
        r = med[m]
        print("  %-10s step %7.1f  units' forward %6.1f  recompute %6.1f%s"
              % (m, r["step"], r["forward"], r["recompute"],
                 "" if m == "nograd" else "  slowdown %+.1f%%" % ((r["step"] / base["step"] - 1) * 100)))
    print("  recompute / baseline forward of the units: %.2f; no_grad forward / forward: %.2f;"
          " recompute / baseline step: %+.1f%%"
          % (med["checkpoint"]["recompute"] / base["forward"], med["nograd"]["forward"] / base["forward"],
             med["checkpoint"]["recompute"] / base["step"] * 100))


if __name__ == "__main__":
    main()
