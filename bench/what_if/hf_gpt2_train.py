#!/usr/bin/env python3
"""A Hugging Face GPT-2 built from a small config (random weights, nothing
downloaded) trained on random tokens: the second job of the what-if
benchmark (what_if_bench.py). Prints `step <i> loss <value>` per step."""
import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)
    config = GPT2Config(n_layer=a.layers, n_embd=a.hidden, n_head=a.heads, n_positions=a.seq,
                        vocab_size=a.vocab, use_cache=False, attn_implementation="eager")
    model = GPT2LMHeadModel(config)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(a.seed + 1)
    for step in range(a.steps):
        idx = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g)
        loss = model(input_ids=idx, labels=idx).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.6f}", flush=True)


if __name__ == "__main__":
    main()
