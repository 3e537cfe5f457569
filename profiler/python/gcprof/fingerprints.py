"""Per-step fingerprints of what a plan must leave unchanged besides the loss.

A checkpoint plan may only trade memory for time: gradients and the model's
buffers (BatchNorm running statistics) after a step must be those of the run
without it. Losses alone do not show either (running_mean was off by
0.76 after recomputation while every loss matched). When a scheduled step
ends (after optimizer.step(), before the next zero_grad) two scalars are
recorded:

- grad_norm:   the L2 norm, in float64, of every gradient the optimizer holds;
- buffer_norm: the L2 norm, in float64, of every numeric buffer of the model
  (running_mean, running_var, num_batches_tracked, ...).

`gcprof verify` compares both with the baseline's, step by step
(docs/plan.md). Each costs one pass over the tensors and one .item() (a few
ms for a ResNet-18: see _norm), so not every step pays it: see scheduled().
"""


# Fingerprinted steps: the first _FIRST, then every _EVERY-th (scheduled()).
_FIRST = 3
_EVERY = 8


def scheduled(step):
    """Whether the step of this 0-based index is fingerprinted: 0, 1, 2, 8,
    16, 24, ...

    A plan that changes gradients or running statistics does it in the first
    step it runs, which is step 0 (a plan is applied before the first forward):
    the recomputation updates BatchNorm's statistics a second time, or
    recomputes with other inputs or dropout masks. Steps 1 and 2
    see the same plan on updated parameters and optimizer state, past any
    first-step special case (lazy modules, an optimizer's first step). Every
    8th step after them catches what starts later (a module only some
    batches reach, a schedule that turns something on); the loss, compared
    at every step, still catches most of that. Over a long run this is one
    step in eight: the ~1% of a ResNet-18 step the fingerprints cost
    (bench/history/recording-overhead.md) becomes ~0.1%. The recording and verify's
    re-run use this same function, so both have values at the same steps.
    """
    return step < _FIRST or step % _EVERY == 0


# Tensors above this many elements are summed by rows of _ROW elements.
_ROW = 4096


def _norm(torch, tensors):
    """L2 norm of all tensors together, accumulated in float64.

    Converting every element to float64 (vector_norm(dtype=float64)) costs
    ~6 ns per element on one core: 64 ms per step for the 11M gradients of a
    ResNet-18, 9% of its step (bench/history/recording-overhead.md). Instead:

    - a float32 tensor of fewer than 16 rows' elements has its norm taken in
      float32, all of them in one fused call (torch._foreach_norm; a short
      float32 sum: relative error ~1e-7), and those norms are squared and
      added in float64;
    - a larger tensor is cut into rows of 4096 elements whose norms are taken
      in its own precision and accumulated in float64 (a single float32 norm
      of millions of elements errs by ~1e-6, verify's tolerance);
    - the rest (float64, half precision, counters) goes through one fused
      float64 call, as every tensor did before.

    Deterministic on CPU: two identical runs give bit-identical values, and
    any change of a gradient above float32 rounding changes them
    (tests/python/test_hooks.py).
    """
    if not tensors:
        return None
    float32, wide, parts = [], [], []
    for t in tensors:
        t = t.detach()
        if not t.is_floating_point():
            t = t.to(torch.float64)  # num_batches_tracked and other counters
        n = t.numel()
        if t.dtype == torch.float64:
            wide.append(t)
        elif n < 16 * _ROW:
            (float32 if t.dtype == torch.float32 else wide).append(t)
        else:
            flat = t.reshape(-1)
            whole = n - n % _ROW
            rows = torch.linalg.vector_norm(flat[:whole].view(-1, _ROW), dim=1).double()
            parts.append(rows.square().sum())
            if whole < n:
                wide.append(flat[whole:])
    if float32:
        parts.append(_squares(torch, float32, None))
    if wide:
        parts.append(_squares(torch, wide, torch.float64))
    return float(torch.stack(parts).sum().sqrt().item())


def _squares(torch, tensors, dtype):
    """Sum in float64 of the squared norms of tensors (norms taken in `dtype`,
    None: their own), one fused call where PyTorch has one."""
    norms = None
    foreach = getattr(torch, "_foreach_norm", None)
    if foreach is not None:
        try:
            norms = foreach(tensors, 2) if dtype is None else foreach(tensors, 2, dtype=dtype)
        except (TypeError, RuntimeError):  # older PyTorch: no dtype argument
            norms = None
    if norms is None:
        norms = [torch.linalg.vector_norm(t, dtype=dtype) for t in tensors]
    return torch.stack(list(norms)).double().square().sum()


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
