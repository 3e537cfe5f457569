"""Per-step fingerprints of what a plan must leave unchanged besides the loss.

A checkpoint plan may only trade memory for time: gradients and the model's
buffers (BatchNorm running statistics) after a step must be those of the run
without it. Losses alone do not show either (issue 15: running_mean off by
0.76 after recomputation while every loss matched). When a step ends (after
optimizer.step(), before the next zero_grad) two scalars are recorded:

- grad_norm:   the L2 norm, in float64, of every gradient the optimizer holds;
- buffer_norm: the L2 norm, in float64, of every numeric buffer of the model
  (running_mean, running_var, num_batches_tracked, ...).

`gcprof verify` compares both with the baseline's (docs/plan.md). Each costs
one pass over the tensors and one .item() per step.
"""


def _norm(torch, tensors):
    total = None
    for t in tensors:
        t = t.detach()
        if not t.is_floating_point():
            t = t.to(torch.float64)  # num_batches_tracked and other counters
        n = torch.linalg.vector_norm(t, dtype=torch.float64)
        total = n * n if total is None else total + n * n
    return None if total is None else float(total.sqrt().item())


def grad_norm(torch, optimizer):
    grads = []
    for group in getattr(optimizer, "param_groups", ()):
        for p in group.get("params", ()):
            g = getattr(p, "grad", None)
            if isinstance(g, torch.Tensor) and not g.is_sparse and g.numel():
                grads.append(g)
    return _norm(torch, grads)


def buffer_norm(torch, model):
    if model is None:
        return None
    buffers = [b for b in model.buffers()
               if b.numel() and b.dtype != torch.bool and not b.is_complex()]
    return _norm(torch, buffers)
