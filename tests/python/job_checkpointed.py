"""A job that checkpoints by itself, for plans applied on top of it.

    job_checkpointed.py hf      # Hugging Face GPT-2 (tiny, random weights), gradient_checkpointing_enable()
    job_checkpointed.py timm    # a model with timm's grad_checkpointing flag on, checkpointing its blocks
    job_checkpointed.py manual  # TinyGPT whose loop wraps each layer in torch.utils.checkpoint
    job_checkpointed.py plain   # TinyGPT, no checkpointing of its own

Prints `loss <step> <repr>` per step, like tiny_model.py; imports nothing of gcprof.
"""
import sys

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from tiny_model import TinyGPT


class TimmLike(TinyGPT):
    """timm's pattern: set_grad_checkpointing() sets a flag the forward reads."""

    def __init__(self):
        super().__init__()
        self.grad_checkpointing = False

    def set_grad_checkpointing(self, enable=True):
        self.grad_checkpointing = enable

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.embed(tokens) + self.pos(torch.arange(t))
        for layer in self.layers:
            x = checkpoint(layer, x, self.mask, use_reentrant=False) if self.grad_checkpointing else layer(x, self.mask)
        return self.head(self.norm(x))


class ManualCheckpoints(TinyGPT):
    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.embed(tokens) + self.pos(torch.arange(t))
        for layer in self.layers:
            x = checkpoint(layer, x, self.mask, use_reentrant=False)
        return self.head(self.norm(x))


def build(kind):
    torch.manual_seed(0)
    if kind == "hf":
        import transformers as tf
        cfg = tf.GPT2Config(n_layer=2, n_embd=32, n_head=4, n_positions=16, vocab_size=64,
                            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False)
        model = tf.GPT2LMHeadModel(cfg)
        model.gradient_checkpointing_enable()
        return model
    if kind == "timm":
        model = TimmLike()
        model.set_grad_checkpointing()
        return model
    return ManualCheckpoints() if kind == "manual" else TinyGPT()


def main():
    kind = sys.argv[1]
    model = build(kind)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(1)
    for step in range(2):
        tokens = torch.randint(0, 64, (4, 17), generator=data)
        out = model(tokens[:, :-1])
        logits = out if torch.is_tensor(out) else out.logits
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        print("loss %d %r" % (step, loss.item()), flush=True)


if __name__ == "__main__":
    main()
