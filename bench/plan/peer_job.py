#!/usr/bin/env python3
"""The training job of the peers bench (peers_bench.py), with one peer's
checkpointing applied the way its users apply it.

    peer_job.py --model gpt|gpt2 [--layers 8 --hidden 256 --seq 256 --batch 8 --steps 4]
                [--peer none | every:K | titan | compile | compile:V | milp:DECISIONS.json]

Models: the Megatron-style GPT of samples/python/train_gpt.py (dropout 0.1)
or a Hugging Face GPT-2 from a GPT2Config (random weights, eager attention,
nothing downloaded); its blocks are `layers.N` / `transformer.h.N`, the
names gcprof's plans use when the job runs with `--peer none` under
`gcprof apply`. Peers (peer_rules.py, peer_milp.py): every K-th block under
torch.utils.checkpoint; torchtitan's per-block selective rule; the model
under torch.compile as it comes (`compile`: the job its user compiles,
which `gcprof verify --compile-budgets` re-runs) or with
activation_memory_budget V; the save-lists PyTorch's
SAC MILP chose (peer_milp.py solve writes DECISIONS.json). One intra-op
thread. Prints `step <i> loss <value>` per step.
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "samples", "python"))

import peer_rules  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=["gpt", "gpt2"], required=True)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--peer", default="none")
    return p.parse_args(argv)


def build(a):
    """(model, blocks, loss_of(model, tokens)) with weights drawn from --seed."""
    torch.manual_seed(a.seed)
    if a.model == "gpt":
        import train_gpt
        # The sample's GPT as its build_model makes it, without the move to
        # a device (which a FakeTensorMode, peer_milp.py, cannot do).
        model = train_gpt.GPT(a.vocab, a.hidden, a.heads, a.seq, a.layers, dropout=0.1)

        def loss_of(m, tokens):
            logits = m(tokens[:, :-1])
            return F.cross_entropy(logits.reshape(-1, a.vocab), tokens[:, 1:].reshape(-1))
        return model, model.layers, loss_of
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(n_layer=a.layers, n_embd=a.hidden, n_head=a.heads, n_positions=a.seq + 1,
                        vocab_size=a.vocab, bos_token_id=a.vocab - 1, eos_token_id=a.vocab - 1,
                        use_cache=False, attn_implementation="eager")
    model = GPT2LMHeadModel(config)

    def loss_of(m, tokens):
        return m(input_ids=tokens[:, :-1], labels=tokens[:, :-1]).loss
    return model, model.transformer.h, loss_of


def apply_peer(peer, model, blocks):
    """The model to train: `model` itself, its blocks wrapped, or compiled."""
    kind, _, value = peer.partition(":")
    if kind == "none":
        return model
    if kind == "every":
        peer_rules.checkpoint_every(blocks, int(value))
        return model
    if kind == "titan":
        peer_rules.checkpoint_selective(blocks)
        return model
    if kind == "compile":
        return peer_rules.compiled(model, float(value) if value else None)
    if kind == "milp":
        import peer_milp
        peer_milp.apply_decisions(model, value)
        return model
    sys.exit("peer_job: unknown --peer %r (none, every:K, titan, compile, compile:V, milp:FILE)" % peer)


def main(argv=None):
    a = parse_args(argv)
    torch.set_num_threads(1)
    model, blocks, loss_of = build(a)
    model.train()
    trained = apply_peer(a.peer, model, blocks)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    g = torch.Generator().manual_seed(a.seed + 1)
    for step in range(a.steps):
        tokens = torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=g)
        opt.zero_grad(set_to_none=True)
        loss = loss_of(trained, tokens)
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
