"""A small decoder-only transformer and a training loop for the shim's tests.

Run as a script it trains a few steps and prints one `loss <step> <repr>` line
per step (repr keeps every bit of the float). It imports nothing of gcprof
unless --apply-plan is given, like a user's job.
"""
import argparse

import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, hidden, heads, dropout):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) / (k.shape[-1] ** 0.5)
        if mask is not None:
            att = att.masked_fill(mask[:t, :t] == 0, float("-inf"))
        att = self.drop(att.softmax(-1))
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, c))


class MLP(nn.Module):
    def __init__(self, hidden, dropout):
        super().__init__()
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.act = nn.ReLU(inplace=True)  # in place after a hooked Linear on purpose
        self.out = nn.Linear(4 * hidden, hidden)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.drop(self.out(self.act(self.fc(x))))


class Block(nn.Module):
    def __init__(self, hidden, heads, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = Attention(hidden, heads, dropout)
        self.ln2 = nn.LayerNorm(hidden)
        self.mlp = MLP(hidden, dropout)

    def forward(self, x, mask=None):
        x = x + self.attn(self.ln1(x), mask=mask)
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab=64, hidden=32, heads=4, layers=3, seq=16, dropout=0.0):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(seq, hidden)
        self.layers = nn.ModuleList(Block(hidden, heads, dropout) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)))

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.embed(tokens) + self.pos(torch.arange(t, device=tokens.device))
        for layer in self.layers:
            x = layer(x, mask=self.mask)  # a keyword argument, passed through checkpoint
        return self.head(self.norm(x))


def train(steps=3, layers=3, dropout=0.0, seed=0, plan=None, batch=4, seq=16):
    torch.manual_seed(seed)
    model = TinyGPT(layers=layers, seq=seq, dropout=dropout)
    if plan:
        import gcprof
        gcprof.apply_plan(model, plan)
    criterion = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(seed + 1)
    losses = []
    for _ in range(steps):
        tokens = torch.randint(0, 64, (batch, seq + 1), generator=data)
        logits = model(tokens[:, :-1])
        loss = criterion(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--apply-plan", default=None)
    a = p.parse_args()
    _, losses = train(a.steps, a.layers, a.dropout, a.seed, a.apply_plan)
    for i, v in enumerate(losses):
        print("loss %d %r" % (i, v))


if __name__ == "__main__":
    main()
