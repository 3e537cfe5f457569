#!/usr/bin/env python3
"""A small decoder-only transformer trained on synthetic tokens, in plain PyTorch.

This is the job gcprof records: it imports nothing of gcprof. Its twin,
samples/cpp/gpt_train.cpp, builds the same model from the same ATen ops so
that both save the same tensors for backward.

    python3 samples/python/train_gpt.py --layers 8 --steps 4

Prints one line per step: `step <i> loss <value>`. On CPU the losses are the
same run to run for a given --seed.

Importable: build_model(args), parse_args(argv) and make_batch(args, generator)
let tests build exactly this model and data (tests/e2e/saved_bytes_reference.py).
"""
import argparse
import math
import sys

import torch
from torch import nn
import torch.nn.functional as F


class Attention(nn.Module):
    """Causal self-attention written out op by op (no fused SDPA), so the
    tensors it saves for backward are the textbook ones: the scores'
    softmax, the dropout mask, q, k, v."""

    def __init__(self, hidden, heads, seq, dropout):
        super().__init__()
        if hidden % heads != 0:
            raise ValueError(f"--hidden {hidden} is not a multiple of --heads {heads}")
        self.heads = heads
        self.dropout = dropout
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        # A buffer, created once: it is not an activation of any step.
        mask = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        b, s, h = x.shape
        d = h // self.heads
        qkv = self.qkv(x).view(b, s, 3, self.heads, d).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
        scores = scores.masked_fill(self.mask[:s, :s], float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        if self.dropout > 0:
            probs = F.dropout(probs, self.dropout, self.training)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, h)
        out = self.proj(out)
        if self.dropout > 0:
            out = F.dropout(out, self.dropout, self.training)
        return out


class MLP(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, hidden, heads, seq, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = Attention(hidden, heads, seq, dropout)
        self.ln2 = nn.LayerNorm(hidden)
        self.mlp = MLP(hidden)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, hidden, heads, seq, layers, dropout):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(seq, hidden)
        self.layers = nn.ModuleList(Block(hidden, heads, seq, dropout) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, idx):
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(positions)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.ln_f(x))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--hidden", type=int, default=192)
    p.add_argument("--heads", type=int, default=6)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=24)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--compile", action="store_true", help="train torch.compile(model) (Inductor)")
    args = p.parse_args(argv)
    if args.hidden % args.heads != 0:
        p.error(f"--hidden {args.hidden} is not a multiple of --heads {args.heads}")
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda but no CUDA device is available; use --device cpu")
    return args


def build_model(args):
    """The model with its initial weights drawn from --seed."""
    torch.manual_seed(args.seed)
    model = GPT(args.vocab, args.hidden, args.heads, args.seq, args.layers, args.dropout)
    return model.to(args.device)


def data_generator(args):
    """Its own generator, so that data does not depend on dropout's draws."""
    g = torch.Generator(device="cpu")
    g.manual_seed(args.seed + 1)
    return g


def make_batch(args, generator):
    """Random tokens; targets are the inputs shifted by one (next-token loss)."""
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=generator)
    tokens = tokens.to(args.device)
    return tokens[:, :-1], tokens[:, 1:]


def main(argv=None):
    args = parse_args(argv)
    model = build_model(args)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    gen = data_generator(args)
    trained = torch.compile(model) if args.compile else model
    for step in range(args.steps):
        inputs, targets = make_batch(args, gen)
        opt.zero_grad(set_to_none=True)
        logits = trained(inputs)
        loss = F.cross_entropy(logits.reshape(-1, args.vocab), targets.reshape(-1))
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
