#!/usr/bin/env python3
"""PyTorch's SAC MILP (torch.distributed._tools) as a peer of gcprof advise:
estimate, solve for a memory budget, then apply its per-module save-lists.

    peer_milp.py solve --model gpt|gpt2 [model options] --budget BYTES --plain-peak BYTES -o DECISIONS.json
    peer_job.py ... --peer milp:DECISIONS.json          # trains with them (apply_decisions)

Solve follows PyTorch's own use of the tools (test_sac_ilp.py): under
FakeTensorMode, MemTracker over two steps, RuntimeEstimator over one,
SACEstimator over a forward; aggregate_stats, parse_module_info, sac_milp
with the blocks as AC units; then per chosen block
get_optimal_checkpointing_policy_per_module with the kept fraction
(1 - discard ratio) gives which operator calls to save.

Two adjustments, both written into DECISIONS.json's "notes":
- the estimators time operators with CUDA events (benchmark mode) or a GPU
  roofline (cost-model mode). On a CPU both fail as shipped; the benchmark
  mode is then retried with a perf_counter timer in place of the events.
- the MILP counts parameters, gradients and activations, not the optimizer
  state or the allocator's rest: its budget is the host budget less the
  difference between the recorded no-checkpoint peak and the MILP's own
  no-checkpoint peak, so that both describe the same job.
"""
import argparse
import collections
import contextlib
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import peer_rules  # noqa: E402


class PerfCounterEvent:
    """Stands in for torch.Event(enable_timing=True) on a CPU: the estimator
    records one before and one after its timed calls, which run synchronously."""

    def __init__(self, enable_timing=True):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


@contextlib.contextmanager
def perf_counter_timer():
    saved = torch.Event, torch.accelerator.current_stream, torch.accelerator.synchronize
    torch.Event = PerfCounterEvent
    torch.accelerator.current_stream = lambda *a, **k: None
    torch.accelerator.synchronize = lambda *a, **k: None
    try:
        yield
    finally:
        torch.Event, torch.accelerator.current_stream, torch.accelerator.synchronize = saved


def estimate(a, mode):
    """ModuleInfo and the SACEstimator of the job's model, under FakeTensorMode."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed._tools.ilp_utils import aggregate_stats
    from torch.distributed._tools.mem_tracker import MemTracker
    from torch.distributed._tools.runtime_estimator import RuntimeEstimator
    from torch.distributed._tools.sac_estimator import SACEstimator
    import peer_job
    with FakeTensorMode():
        model, blocks, loss_of = peer_job.build(a)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
        tokens = torch.randint(0, a.vocab, (a.batch, a.seq + 1))

        def step():
            loss_of(model, tokens).backward()
            opt.step()
            opt.zero_grad()
        mem = MemTracker()
        mem.track_external(model, opt)
        with mem as mt:
            for i in range(2):  # the first step creates the optimizer state
                step()
                if i == 0:
                    mt.reset_mod_stats()
        runtime = RuntimeEstimator()
        with runtime(estimate_mode_type=mode):
            step()
        sac = SACEstimator()
        with sac(estimate_mode_type=mode):
            loss = loss_of(model, tokens)
        loss.backward()
        info = aggregate_stats(model, mem, runtime, sac, torch.device("cpu"))
    root = type(model).__name__
    return info, sac, root, [root + "." + n for n, m in model.named_modules() if m in set(blocks)]


def solve(a):
    from torch.distributed._tools.ilp_utils import get_peak_memory_runtime_baseline, parse_module_info
    from torch.distributed._tools.sac_ilp import get_optimal_checkpointing_policy_per_module, sac_milp
    notes = []
    try:
        info, sac, root, units = estimate(a, "operator-level-benchmark")
        notes.append("estimators ran as shipped")
    except Exception as e:  # what fails on a CPU is the point of the note
        notes.append("estimators as shipped failed on CPU (%s: %s); ran with a perf_counter timer"
                     % (type(e).__name__, str(e).splitlines()[0][:120]))
        with perf_counter_timer():
            info, sac, root, units = estimate(a, "operator-level-benchmark")
    graph = parse_module_info(info)
    milp_peak, _ = get_peak_memory_runtime_baseline(graph)
    offset = a.plain_peak - milp_peak
    budget = a.budget - offset
    notes.append("MILP no-checkpoint peak %.1f MiB vs recorded %.1f MiB: budget %.1f MiB given as %.1f MiB"
                 % (milp_peak / 2**20, a.plain_peak / 2**20, a.budget / 2**20, budget / 2**20))
    decisions, recompute_ms, peak = sac_milp(graph, budget / 2**30, world_size=1, ac_units=units)
    modules = {}
    for fqn, discard in sorted(decisions.items()):
        stats = sac.sac_mod_stats[fqn]
        save = get_optimal_checkpointing_policy_per_module(stats, 1 - discard)
        if not save:
            notes.append("per-module solve failed for %s: checkpointed whole" % fqn)
            save = [0] * len(stats.func_names)
        modules[fqn[len(root) + 1:]] = {"discard": discard, "ops": list(zip(stats.func_names, save))}
    result = {"feasible": peak != -1, "milp_peak_bytes": peak, "recompute_ms": recompute_ms,
              "modules": modules, "notes": notes}
    with open(a.output, "w") as f:
        json.dump(result, f, indent=1)
    print("\n".join(notes))
    return 0


def decisions_policy(ops):
    """A policy that saves the k-th call of an operator when the solve saved it."""
    saved = collections.defaultdict(list)
    for name, keep in ops:
        saved[name].append(keep)
    counts = collections.Counter()
    CheckpointPolicy = torch.utils.checkpoint.CheckpointPolicy

    def policy(ctx, op, *args, **kwargs):
        name = op.overloadpacket.__name__
        key = (ctx.is_recompute, name)
        k = counts[key]
        counts[key] += 1
        keep = saved.get(name, [])
        return CheckpointPolicy.MUST_SAVE if k < len(keep) and keep[k] else CheckpointPolicy.PREFER_RECOMPUTE
    return policy


def apply_decisions(model, path):
    """Checkpoints the chosen modules with the solve's save-lists. The MILP
    ties an in-place op to the op whose output it mutates, so a saved output
    can be mutated after it was cached: PyTorch's selective checkpointing
    refuses that unless allow_cache_entry_mutation is set (peers_bench.py
    checks that the losses stay those of the job without checkpointing)."""
    with open(path) as f:
        decisions = json.load(f)
    named = dict(model.named_modules())
    for name, d in decisions["modules"].items():
        ops = d["ops"]
        peer_rules.checkpoint_with(
            named[name], lambda ops=ops: torch.utils.checkpoint.create_selective_checkpoint_contexts(
                decisions_policy(ops), allow_cache_entry_mutation=True))


def main():
    import peer_job
    if len(sys.argv) < 2 or sys.argv[1] != "solve":
        sys.exit(__doc__)
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--budget", type=int, required=True)
    extra.add_argument("--plain-peak", type=int, required=True)
    extra.add_argument("-o", "--output", required=True)
    known, rest = extra.parse_known_args(sys.argv[2:])
    a = peer_job.parse_args(rest)
    for k, v in vars(known).items():
        setattr(a, k, v)
    torch.set_num_threads(1)
    return solve(a)


if __name__ == "__main__":
    sys.exit(main())
