"""Wrapping one module's forward in torch.utils.checkpoint.

The module keeps its class, parameters, state_dict and hooks; only the
instance attribute `forward` is set, so Module.__call__ (and with it the
global module hooks, and so the module's forward range) works as before.

Non-reentrant checkpoint with the RNG state preserved: dropout draws the
same masks in the recomputation, so results are identical. Keyword arguments
reach the module through a closure rather than through checkpoint(**kwargs),
whose own keywords (debug, context_fn, ...) could collide with the module's.

The wrapped function runs twice per step: the first call is the forward, the
later ones are recomputations inside backward. Those run under
`recompute_context(name)` so the profiler marks them as a user range
`recompute <name>` instead of a second forward range.

Running state (BatchNorm's running_mean/var and num_batches_tracked) would
be updated a second time by the recompute forward, which runs in training
mode (num_batches_tracked was 4 instead of 2 after 2 steps). It is
saved before and put back after every recomputation (also when PyTorch stops
a recomputation early), so the statistics equal a run without the plan
exactly. Inputs changed in place after the forward are caught by PyTorch's
own saved-tensor version check (a loud error); the advisor leaves modules
recorded as in-place out of plans (module_ranges.py). A list or dict passed
in can be changed after the call without a version check: a torchvision
DenseNet layer is passed its dense block's list of features, which the block
then appends the layer's output to, so a recomputation from that list
concatenated one tensor more ("running_mean should contain 1024 elements not
992"). The recomputation gets copies of the containers as they were at the
call (the tensors in them are the same; the forward itself gets the
originals, so a module that fills a list it is passed still does).

Selective checkpoints (`save`: operator calls "aten.mm.default#0", plan v2)
use PyTorch's selective checkpointing (torch.utils.checkpoint's context_fn
with create_selective_checkpoint_contexts, PyTorch >= 2.4): a policy counts
the calls of each operator in the forward, as the recording numbered them
(op_ranges.py), and answers MUST_SAVE for the listed ones and
PREFER_RECOMPUTE for the rest. PyTorch replays the recomputation from its
cache by the same numbering, so the kept outputs are returned, not recomputed.
A save-list with in-place calls keeps a dropout's mask on a CPU (empty_like,
bernoulli_ and div_ together: the advisor saves in-place calls only so,
chain/selective_options.h): the cached empty_like output is filled in place
after it was cached, which PyTorch refuses unless told to allow it; the
replay takes all three from the cache, so the mask is the forward's.

A call passed a Hugging Face key/value cache (peft's prefix tuning) runs
without checkpointing, with a warning: its forward extends the cache in
place, and a recomputation would extend it again.
"""
import contextlib
import sys

_MARK = "__gcprof_checkpointed__"

# Set by the profiler when recording (module_ranges.py); a no-op otherwise.
recompute_context = None


def is_checkpointed(module):
    return getattr(module.forward, _MARK, None) is not None


# The flags with which libraries make a module checkpoint itself or its
# children: Hugging Face's gradient_checkpointing_enable() sets
# `gradient_checkpointing` on its layers (older versions on the encoder that
# loops over them), timm's set_grad_checkpointing() `grad_checkpointing` on
# the model, diffusers the same as Hugging Face.
_JOB_FLAGS = (("gradient_checkpointing", "Hugging Face gradient checkpointing "
               "(gradient_checkpointing_enable(); turn it off with gradient_checkpointing_disable())"),
              ("grad_checkpointing", "timm's set_grad_checkpointing() (turn it off with "
               "set_grad_checkpointing(False))"))


def _job_flag(module):
    for attr, how in _JOB_FLAGS:
        if getattr(module, attr, None) is True:
            return how
    return None


def job_checkpointing(root, targets):
    """(name, module it is under or contains that checkpoints by itself, how)
    for each target a library already checkpoints: a plan on top of it would
    recompute those modules twice per step. `root` is the model the names
    are of; a flag on a target, on a module above it, or on one inside it counts."""
    by_id = {id(m): n for n, m in root.named_modules()}
    flagged = {n: _job_flag(m) for n, m in root.named_modules() if _job_flag(m)}
    found = []
    for name, module in targets:
        own = by_id.get(id(module), name)
        # The innermost flagged module above (or at) it is the one that
        # checkpoints (HF sets the flag on the stack that holds the layers too).
        above = [o for o in flagged if o == "" or own == o or own.startswith(o + ".")]
        hit = None
        if above:
            other = max(above, key=len)
            hit = (other or type(root).__name__, flagged[other])
        if hit is None:
            inner = next(((n, _job_flag(m)) for n, m in module.named_modules() if _job_flag(m)), None)
            if inner is not None:
                hit = (name + ("." + inner[0] if inner[0] else ""), inner[1])
        if hit is not None:
            found.append((name, hit[0], hit[1]))
    return found


_warned = set()


def _warn_once(name, why):
    """One line on stderr per module and reason: the module is called every step."""
    if (name, why) in _warned:
        return
    _warned.add((name, why))
    sys.stderr.write("gcprof: warning: %r %s\n" % (name, why))
    sys.stderr.flush()


_RECOMPUTED_BY_THE_JOB = (
    "is recomputed in backward by a checkpoint of the job's own "
    "(torch.utils.checkpoint around it or around a module above it): gcprof does not "
    "checkpoint it a second time there, so it is recomputed once, but the plan's "
    "predictions assume the job does not checkpoint; record the job as it runs and "
    "advise again")


def _passed_a_cache(args, kwargs):
    """Whether a Hugging Face key/value cache (transformers' Cache) is among
    the call's arguments: peft's prefix tuning passes every layer one holding
    the prefix, and the layer's attention appends its keys and values to it
    in place. A recomputation would append them a second time (keys of 264
    positions against 136 expected: a RuntimeError in backward). HF's own
    gradient checkpointing drops the cache instead, which changes what the
    layer computes."""
    cache_utils = sys.modules.get("transformers.cache_utils")
    cache = getattr(cache_utils, "Cache", None)
    if cache is None:
        return False
    return any(isinstance(v, cache) for v in args) or any(isinstance(v, cache) for v in kwargs.values())


_PASSED_A_CACHE = (
    "is passed a key/value cache (past_key_values: prefix tuning, "
    "a prompt cache) that its forward extends in place; recomputing it would extend "
    "the cache twice, so it runs without checkpointing and the plan's saving for it is "
    "not made (checkpoint modules below it that are not passed the cache, such as its "
    "MLP, with --units)")


def _in_checkpoint_forward(torch):
    """Whether a non-reentrant torch.utils.checkpoint's forward is under way
    on this thread: its saved-tensor hooks are the innermost ones. (A
    reentrant one runs its forward without grad, which needs no check.)"""
    top = getattr(getattr(torch._C, "_autograd", None), "_top_saved_tensors_default_hooks", None)
    if top is None:
        return False
    try:
        hooks = top(False)
    except Exception:
        return False
    return bool(hooks) and "_checkpoint_hook" in getattr(hooks[0], "__qualname__", "")


def _running_state(module):
    """Buffers a training-mode forward updates (BatchNorm and the like), copied."""
    return [(b, b.clone()) for n, b in module.named_buffers()
            if n.rsplit(".", 1)[-1].startswith("running_") or n.endswith("num_batches_tracked")]


def _restore(state):
    for buffer, saved in state:
        buffer.copy_(saved)


def save_policy(save):
    """A selective-checkpoint policy keeping the listed calls; fresh counts per forward."""
    from torch.utils.checkpoint import CheckpointPolicy

    wanted = frozenset(save)
    counts = {}

    def policy(ctx, func, *args, **kwargs):
        if getattr(ctx, "is_recompute", False):
            return CheckpointPolicy.PREFER_RECOMPUTE  # older PyTorch asks again; its cache decides
        name = str(func)
        n = counts.get(name, 0)
        counts[name] = n + 1
        if "%s#%d" % (name, n) in wanted:
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    return policy


def _in_place(key):
    """Whether "aten.bernoulli_.float#0" names an in-place operator."""
    name = key.rsplit("#", 1)[0]
    if name.startswith("aten."):
        name = name[len("aten."):]
    return name.split(".", 1)[0].endswith("_")


def _context_fn(torch, save):
    try:
        from torch.utils.checkpoint import create_selective_checkpoint_contexts
    except ImportError:
        raise RuntimeError("selective checkpoints need PyTorch 2.4 or newer (found %s); advise with "
                           "--whole-only" % torch.__version__) from None

    mutated = any(_in_place(key) for key in save)

    def context_fn():
        if mutated:
            return create_selective_checkpoint_contexts(save_policy(save), allow_cache_entry_mutation=True)
        return create_selective_checkpoint_contexts(save_policy(save))

    return context_fn


def _containers_copied(value, depth=0):
    """`value` with the lists, tuples and dicts in it copied (tensors and
    anything else shared), a few levels deep."""
    if depth >= 4:
        return value
    if type(value) is list:
        return [_containers_copied(v, depth + 1) for v in value]
    if type(value) is tuple:
        return tuple(_containers_copied(v, depth + 1) for v in value)
    if type(value) is dict:
        return {k: _containers_copied(v, depth + 1) for k, v in value.items()}
    return value


def checkpoint_module(torch, module, name, save=None):
    """Makes every grad-enabled call of `module` a checkpointed region.

    With `save` (a list of "op#n"), a selective one keeping those outputs.
    """
    if is_checkpointed(module):
        return
    original = module.forward  # bound method (or a previous instance override)
    from torch.utils.checkpoint import checkpoint
    extra = {"context_fn": _context_fn(torch, save)} if save else {}

    in_backward = getattr(torch._C, "_current_graph_task_id", lambda: -1)

    def forward(*args, **kwargs):
        if not torch.is_grad_enabled():
            return original(*args, **kwargs)  # evaluation: nothing to save
        if in_backward() != -1 or _in_checkpoint_forward(torch):
            # Inside another checkpoint: its forward, or its recomputation
            # in backward (this one's reruns `run` below, not this function).
            # Checkpointing again would recompute the module twice; and the
            # outer checkpoint needs its recomputation to save what its
            # forward saved, so both run the module as it is.
            _warn_once(name, _RECOMPUTED_BY_THE_JOB)
            return original(*args, **kwargs)
        if _passed_a_cache(args, kwargs):
            _warn_once(name, _PASSED_A_CACHE)
            return original(*args, **kwargs)
        calls = [0]
        at_call = _containers_copied((args, kwargs))

        def run(*inner_args):
            calls[0] += 1
            if calls[0] == 1:
                return original(*inner_args, **kwargs)
            context = recompute_context(name) if recompute_context else contextlib.nullcontext()
            state = _running_state(module)
            try:
                with context:
                    return original(*at_call[0], **at_call[1])
            finally:
                with torch.no_grad():
                    _restore(state)

        return checkpoint(run, *args, use_reentrant=False, preserve_rng_state=True, **extra)

    setattr(forward, _MARK, name)
    module.forward = forward
