"""Data-parallel training as users write it (docs/distributed.md, "Launchers
and patterns"): the small transformer of samples/python/train_gpt.py on 2
ranks (gloo, CPU), trained for --steps optimizer steps; every rank prints
`rank <r> step <i> loss <value>` (the mean of the step's micro-batch losses).

    torchrun --standalone --nproc_per_node=2 dist_patterns_job.py ddp --accum 2   # no_sync()
    torchrun ... dist_patterns_job.py ddp --find-unused --branch-every 2          # a branch some steps skip
    torchrun ... dist_patterns_job.py ddp --static-graph --bucket-view --count-reductions
    accelerate launch --config_file accelerate_cpu2.yaml dist_patterns_job.py accelerate --accum 2

`ddp` wraps the model in DistributedDataParallel itself and accumulates with
`no_sync()` (the allreduce only in the last micro-batch of a step);
`accelerate` uses `Accelerator(cpu=True)`, `prepare(model, opt, loader)`,
`accumulate` and `backward`. Each rank trains on its own data. Model flags
are train_gpt.py's (--layers, --hidden, --seq, --batch, ...).

--count-reductions (ddp) reduces gradients through a DDP communication hook
that counts them and prints `rank <r> step <i> reduced <n> of <m> gradients
in <k> buckets` per step: a gradient reduced twice in a step (a recomputation that
marks parameters ready again) would show there before any error.
"""
import argparse
import contextlib
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "samples", "python"))
import train_gpt  # noqa: E402


class BranchedGPT(train_gpt.GPT):
    """train_gpt's model with an extra MLP before the head that only some
    steps use: its parameters get no gradient in the others, which DDP must
    be told (find_unused_parameters=True)."""

    def __init__(self, args):
        super().__init__(args.vocab, args.hidden, args.heads, args.seq, args.layers, args.dropout)
        self.aux = train_gpt.MLP(args.hidden)

    def forward(self, idx, use_aux=False):
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(positions)
        for layer in self.layers:
            x = layer(x)
        if use_aux:
            x = x + self.aux(x)
        return self.head(self.ln_f(x))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("engine", choices=["ddp", "accelerate"])
    p.add_argument("--accum", type=int, default=1, help="micro-batches per optimizer step")
    p.add_argument("--find-unused", action="store_true", help="DDP find_unused_parameters=True")
    p.add_argument("--branch-every", type=int, default=0,
                   help="a branch (aux MLP) used only in steps divisible by this")
    p.add_argument("--static-graph", action="store_true", help="DDP static_graph=True")
    p.add_argument("--bucket-view", action="store_true", help="DDP gradient_as_bucket_view=True")
    p.add_argument("--count-reductions", action="store_true",
                   help="count the gradients DDP reduces per step (a communication hook)")
    own, rest = p.parse_known_args(argv)
    args = train_gpt.parse_args(rest)
    for k, v in vars(own).items():
        setattr(args, k, v)
    return args


def build(args):
    torch.manual_seed(args.seed)
    return BranchedGPT(args) if args.branch_every else train_gpt.build_model(args)


def loss_of(model, args, tokens, step):
    kwargs = {"use_aux": step % args.branch_every == 0} if args.branch_every else {}
    logits = model(tokens[:, :-1], **kwargs)
    return F.cross_entropy(logits.reshape(-1, args.vocab), tokens[:, 1:].reshape(-1))


def batches(args, rank):
    g = torch.Generator().manual_seed(args.seed + 1 + rank)
    return [torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=g)
            for _ in range(args.steps * args.accum)]


def count_reductions(ddp):
    """DDP's own allreduce, counted: {'gradients': n, 'buckets': k} since the last reset."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    counts = {"gradients": 0, "buckets": 0}

    def allreduce(state, bucket):
        counts["buckets"] += 1
        counts["gradients"] += len(bucket.gradients())
        return default_hooks.allreduce_hook(state, bucket)

    ddp.register_comm_hook(None, allreduce)
    return counts


def train_ddp(args):
    from torch.nn.parallel import DistributedDataParallel
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DistributedDataParallel(build(args), find_unused_parameters=args.find_unused,
                                    static_graph=args.static_graph,
                                    gradient_as_bucket_view=args.bucket_view)
    reduced = count_reductions(model) if args.count_reductions else None
    trainable = sum(1 for q in model.parameters() if q.requires_grad)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    data = iter(batches(args, rank))
    for step in range(args.steps):
        total = 0.0
        for micro in range(args.accum):
            last = micro == args.accum - 1
            with contextlib.nullcontext() if last else model.no_sync():
                loss = loss_of(model, args, next(data), step) / args.accum
                loss.backward()
            total += loss.item()
        opt.step()
        opt.zero_grad(set_to_none=True)
        print(f"rank {rank} step {step} loss {total:.6f}", flush=True)
        if reduced is not None:
            print(f"rank {rank} step {step} reduced {reduced['gradients']} of {trainable} gradients "
                  f"in {reduced['buckets']} buckets", flush=True)
            reduced.update(gradients=0, buckets=0)
    dist.barrier()
    dist.destroy_process_group()


def train_accelerate(args):
    from accelerate import Accelerator
    acc = Accelerator(cpu=True, gradient_accumulation_steps=args.accum)
    # One dataset for the job; the prepared loader deals its batches out to the ranks.
    g = torch.Generator().manual_seed(args.seed + 1)
    n = args.steps * args.accum * acc.num_processes * args.batch
    loader = torch.utils.data.DataLoader(torch.randint(0, args.vocab, (n, args.seq + 1), generator=g),
                                         batch_size=args.batch)
    model = build(args)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    model, opt, loader = acc.prepare(model, opt, loader)
    model.train()
    step, total = 0, 0.0
    for tokens in loader:
        with acc.accumulate(model):
            loss = loss_of(model, args, tokens, step)
            acc.backward(loss)
            opt.step()
            opt.zero_grad()
        total += loss.item() / args.accum
        if acc.sync_gradients:
            print(f"rank {acc.process_index} step {step} loss {total:.6f}", flush=True)
            step, total = step + 1, 0.0
    acc.wait_for_everyone()
    acc.end_training()


def main(argv=None):
    args = parse_args(argv)
    if "RANK" not in os.environ:
        sys.exit("probe_dist.py: run me under torchrun or accelerate launch (RANK is not set)")
    torch.set_num_threads(1)
    (train_ddp if args.engine == "ddp" else train_accelerate)(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
