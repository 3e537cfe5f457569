#!/usr/bin/env python3
"""The small transformer of train_gpt.py trained by several processes under torchrun.

    torchrun --standalone --nproc_per_node=2 samples/python/train_distributed.py --mode ddp
    torchrun --standalone --nproc_per_node=2 samples/python/train_distributed.py --mode fsdp

--mode ddp wraps the model in DistributedDataParallel; --mode fsdp shards
every transformer block and the root with FSDP2's `fully_shard`, which runs on
CPU with the gloo backend (torch >= 2.6), so no FSDP1 fallback is needed.
Each rank draws its own batches (seed + rank), as a data-parallel loader would.
Like train_gpt.py it imports nothing of gcprof: `gcprof record` and `gcprof
verify` attach from outside, and GCPROF_PLAN checkpoints blocks inside their
FSDP units (the forward of a sharded block is wrapped, so its parameters are
gathered again for the recomputation in backward, as with checkpoint_wrapper).

Prints `rank <r> step <i> loss <value>` per step. --fail-rank R --fail-step S
makes rank R exit with code 3 after step S (tests of verification failures);
--extra-buffer-mib N makes rank 0 hold N MiB more than the others (uneven ranks).
--hang-rank R --hang-step S makes rank R sleep forever after step S, so its
peers wait for it in their next collective (tests of hung jobs).
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_gpt  # noqa: E402  (the model and data of the single-process sample)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=["ddp", "fsdp"], default="ddp")
    p.add_argument("--fail-rank", type=int, default=-1)
    p.add_argument("--fail-step", type=int, default=0)
    p.add_argument("--extra-buffer-mib", type=int, default=0)
    p.add_argument("--hang-rank", type=int, default=-1)
    p.add_argument("--hang-step", type=int, default=0)
    own, rest = p.parse_known_args(argv)
    model_args = train_gpt.parse_args(rest)
    for k, v in vars(own).items():
        setattr(model_args, k, v)
    return model_args


def wrap(model, mode):
    if mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel
        return DistributedDataParallel(model)
    from torch.distributed.fsdp import fully_shard
    for block in model.layers:
        fully_shard(block)
    fully_shard(model)
    return model


def main(argv=None):
    args = parse_args(argv)
    if "RANK" not in os.environ:
        sys.exit("train_distributed.py: run me under torchrun (RANK is not set)")
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = wrap(train_gpt.build_model(args), args.mode)
    model.train()
    extra = None
    if rank == 0 and args.extra_buffer_mib > 0:
        extra = torch.ones(args.extra_buffer_mib << 18)  # float32: 4 bytes each
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    args.seed += rank
    gen = train_gpt.data_generator(args)
    for step in range(args.steps):
        inputs, targets = train_gpt.make_batch(args, gen)
        opt.zero_grad(set_to_none=True)
        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), targets.reshape(-1))
        loss.backward()
        opt.step()
        print(f"rank {rank} step {step} loss {loss.item():.6f}", flush=True)
        if rank == args.fail_rank and step == args.fail_step:
            print(f"rank {rank}: exiting with code 3 after step {step} (--fail-rank)", flush=True)
            os._exit(3)
        if rank == args.hang_rank and step == args.hang_step:
            print(f"rank {rank}: hanging after step {step} (--hang-rank)", flush=True)
            while True:
                time.sleep(3600)
    del extra
    # Every rank's collectives are done before the group goes. (It does not
    # stop gloo's worker threads: their late release of a tensor's Python
    # object can still abort a rank at exit, rarely; torch's, see
    # docs/distributed.md, "Known issue".)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
