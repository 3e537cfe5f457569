#!/usr/bin/env python3
"""Independent count of each layer's saved activation bytes, for the end-to-end tests.

Runs the same kind of training as samples/python/train_gpt.py (same model,
batches and flags, imported from it) and counts, with
torch.autograd.graph.saved_tensors_hooks, what autograd keeps for backward
during each `layers.i` forward call:

  - distinct storages only (deduplicated by the storage's data pointer: q, k
    and v are views of one qkv buffer; a storage saved twice counts once),
  - their full size (untyped storage nbytes), which is what the allocator gave,
  - parameters excluded, and storages that already existed when the layer's
    forward began excluded (its inputs: checkpointing keeps those too).

This is the number gcprof derives from the allocation trace alone (bytes
allocated in a unit's forward and freed in its backward); the two methods
share nothing but the model.

    python3 tests/e2e/saved_bytes_reference.py --layers 4 --steps 2
    {"layers.0": 12345678, ...}      # bytes, averaged over steps
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "samples", "python"))
import train_gpt  # noqa: E402


def storage_key(t):
    s = t.untyped_storage()
    return s.data_ptr(), s.nbytes()


class SavedBytesCounter:
    """Attributes every tensor autograd saves to the layer whose forward is running."""

    def __init__(self, model):
        self.current = None          # name of the layer whose forward is running
        self.preexisting = set()     # storage pointers alive before that forward
        self.seen = {}               # storage pointer -> bytes, for the current call
        self.totals = {}             # layer name -> list of per-call bytes
        self.model = model
        for i, layer in enumerate(model.layers):
            layer.register_forward_pre_hook(self._pre_hook(f"layers.{i}"))
            layer.register_forward_hook(self._post_hook(f"layers.{i}"))

    def _parameter_storages(self):
        keys = set()
        for t in list(self.model.parameters()) + list(self.model.buffers()):
            keys.add(t.untyped_storage().data_ptr())
        return keys

    def _pre_hook(self, name):
        def hook(module, inputs):
            self.current = name
            self.seen = {}
            self.preexisting = self._parameter_storages()
            for t in inputs:
                if torch.is_tensor(t):
                    self.preexisting.add(t.untyped_storage().data_ptr())
        return hook

    def _post_hook(self, name):
        def hook(module, inputs, output):
            self.totals.setdefault(name, []).append(sum(self.seen.values()))
            self.current = None
        return hook

    def pack(self, t):
        if self.current is not None:
            ptr, nbytes = storage_key(t)
            if ptr not in self.preexisting and ptr != 0:
                self.seen[ptr] = nbytes
        return t

    @staticmethod
    def unpack(t):
        return t

    def averages(self):
        return {name: sum(v) // len(v) for name, v in self.totals.items()}


def main(argv=None):
    args = train_gpt.parse_args(argv)
    model = train_gpt.build_model(args)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    gen = train_gpt.data_generator(args)
    counter = SavedBytesCounter(model)
    for _ in range(args.steps):
        inputs, targets = train_gpt.make_batch(args, gen)
        opt.zero_grad(set_to_none=True)
        with torch.autograd.graph.saved_tensors_hooks(counter.pack, counter.unpack):
            logits = model(inputs)
            loss = F.cross_entropy(logits.reshape(-1, args.vocab), targets.reshape(-1))
        loss.backward()
        opt.step()
    result = counter.averages()
    print(json.dumps(dict(sorted(result.items(), key=lambda kv: int(kv[0].split(".")[1])))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
