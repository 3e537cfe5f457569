"""Reading a gcprof.plan/2 (or /1) file and applying it to a model (docs/plan.md).

`checkpoint` is a list of segments, each a list of module names (qualified
names as recorded: "layers.3"). Python cannot checkpoint an arbitrary region
between modules, so a segment of several units is applied as one checkpoint
per unit; the advisor emits single-module segments for runs whose runtime is
"python". In a plan over the module tree (v2) the names may be at any depth
("transformer.h.0" here, only "transformer.h.1.attn" there), never nested;
each `segments[]` entry then names the module wrapped (`module`).

Version 2 also adds, per entry of `segments` (parallel to `checkpoint`): `policy` ("whole", the default, or "selective") and,
for selective segments, `save`: the operator calls whose outputs are kept,
"<aten overload>#<occurrence in the module's forward>". Those are applied
with PyTorch's selective checkpointing (checkpointing.py).
"""
import difflib
import itertools
import json
import os
import re
import sys

from .checkpointing import checkpoint_module, job_checkpointing

FORMAT = "gcprof.plan/2"
# Older plans read the same: no `module`/`policy` means whole-module
# checkpoints of the `checkpoint` names.
READABLE_FORMATS = (FORMAT, "gcprof.plan/1")


class PlanError(Exception):
    """A plan that cannot be applied; the message says what and how to fix it."""


# As the C++ readers (advisor/plan/plan_file.cpp): no plan nests deeper, and
# python's json module would recurse until RecursionError on a deeper text.
MAX_DEPTH = 64
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')

# Set once this process refused its plan (exit_with): the job ended for the
# plan, not because it ran no training forward (env_plan.warn_if_unapplied).
refused = False


def _nesting(text):
    """How deeply the JSON text nests lists and objects (strings left out)."""
    brackets = _STRING.sub("", text)
    steps = ((ch in "[{") - (ch in "]}") for ch in brackets if ch in "[]{}")
    return max(itertools.accumulate(steps, initial=0))


def _parse(text, where):
    if _nesting(text) > MAX_DEPTH:
        raise PlanError("%s: nested deeper than %d levels; not a gcprof plan (write plans with "
                        "`gcprof advise -o`)" % (where, MAX_DEPTH))
    try:
        return json.loads(text)
    except ValueError as exc:
        raise PlanError("%s: not valid JSON (%s); write it with `gcprof advise -o`" % (where, exc)) from None
    except RecursionError:
        raise PlanError("%s: nested too deeply to read; not a gcprof plan" % where) from None


def load_plan(plan):
    """A plan as a dict, from a path or an already parsed dict."""
    if isinstance(plan, dict):
        data, where = plan, "plan"
    else:
        where = os.fspath(plan)
        try:
            with open(where, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise PlanError("%s: cannot read the plan (%s)" % (where, exc.strerror or exc)) from None
        except ValueError as exc:  # not UTF-8
            raise PlanError("%s: not valid JSON (%s); write it with `gcprof advise -o`" % (where, exc)) from None
        data = _parse(text, where)
    if not isinstance(data, dict) or data.get("format") not in READABLE_FORMATS:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise PlanError("%s: format is %r, expected %r (or %r); write it with `gcprof advise -o`"
                        % (where, found, FORMAT, READABLE_FORMATS[1]))
    segments = data.get("checkpoint")
    if not isinstance(segments, list) or not all(
            isinstance(s, list) and all(isinstance(n, str) for n in s) for s in segments):
        raise PlanError('%s: "checkpoint" must be a list of segments, each a list of module names'
                        % where)
    _check_segments(data, where)
    return data


def _check_segments(data, where):
    entries = data.get("segments")
    if entries is None:
        return
    if not isinstance(entries, list) or len(entries) != len(data["checkpoint"]):
        raise PlanError('%s: "segments" must be a list with one entry per "checkpoint" segment' % where)
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise PlanError('%s: "segments" entry %d must be an object' % (where, i))
        policy = entry.get("policy", "whole")
        if policy not in ("whole", "selective"):
            raise PlanError('%s: segment %d has policy %r; expected "whole" or "selective"'
                            % (where, i, policy))
        save = entry.get("save", [])
        if not isinstance(save, list) or not all(isinstance(k, str) and "#" in k for k in save):
            raise PlanError('%s: segment %d: "save" must be a list of "<aten op>#<occurrence>" '
                            'strings' % (where, i))
        if policy == "selective" and len(data["checkpoint"][i]) != 1:
            raise PlanError("%s: segment %d is selective but has %d modules; a selective "
                            "segment is one module" % (where, i, len(data["checkpoint"][i])))


def save_lists(plan):
    """Module name -> the operator calls kept, for the selective segments."""
    out = {}
    for names, entry in zip(plan["checkpoint"], plan.get("segments") or []):
        if entry.get("policy", "whole") == "selective":
            module = entry.get("module") or names[0]
            out[module] = list(entry.get("save", []))
    return out


def checkpoint_names(plan):
    """The module names to checkpoint, in plan order, without repeats.

    A v2 segment that names its `module` wraps that module; otherwise every
    name of the `checkpoint` segment is wrapped (v1, and v2 without it).
    """
    names = []
    segments = plan.get("segments")
    modules = None
    if isinstance(segments, list) and len(segments) == len(plan["checkpoint"]):
        modules = [s.get("module") if isinstance(s, dict) else None for s in segments]
    for i, segment in enumerate(plan["checkpoint"]):
        module = modules[i] if modules else None
        for name in ([module] if isinstance(module, str) and module else segment):
            if name not in names:
                names.append(name)
    return names


# Wrappers that prefix every name: DistributedDataParallel / DataParallel
# ("module."), torch.compile ("_orig_mod."). A plan recorded with the wrapper
# applies to the bare model and the other way round.
_WRAPPER_PREFIXES = ("module.", "_orig_mod.")


def _lookup(modules, name):
    if name in modules:
        return modules[name]
    for prefix in _WRAPPER_PREFIXES:
        other = name[len(prefix):] if name.startswith(prefix) else prefix + name
        if other in modules:
            return modules[other]
    return None


def resolve(model, names, where="plan", prefix=""):
    """The (name, module) pairs for `names`, or PlanError listing near
    matches; with `prefix` (another root's class name) the names carry it."""
    modules = dict(model.named_modules())
    if prefix:
        modules = {(prefix + "." + n if n else prefix): m for n, m in modules.items()}
    found = {n: _lookup(modules, n) for n in names}
    missing = [n for n in names if found[n] is None]
    if missing:
        known = [n for n in modules if n]
        lines = ["%s: %d checkpoint name%s not found among the modules of the model (%s):"
                 % (where, len(missing), "" if len(missing) == 1 else "s", type(model).__name__)]
        for name in missing:
            near = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
            hint = ("did you mean " + ", ".join(repr(n) for n in near) + "?") if near else "no similar name"
            lines.append("  %r: %s" % (name, hint))
        lines.append("Names are qualified module names as `gcprof show` lists them; advise on a "
                     "trace of this model or fix the names in the plan.")
        raise PlanError("\n".join(lines))
    return [(n, found[n]) for n in names]


def apply_plan(model, plan):
    """Wraps the planned modules' forward in checkpoint; returns their names.

    `model` may be a list of modules when the job trains several roots on
    one loss (CLIP's image and text towers, neither inside the other): the
    first takes the names as they are, each other one the names prefixed
    with its class name, as the recording named its modules
    ("TextTower.layers.0"); several instances of one class take
    "Class", "Class[1]", ... in list order, which must be the order the job
    first calls them (root_names.py). All names are checked before any
    module is changed, so a bad plan leaves the models untouched.
    """
    from ..root_names import RootNames

    where = "plan" if isinstance(plan, dict) else os.fspath(plan)
    data = load_plan(plan)
    names = checked_names(data, where)
    roots = list(model) if isinstance(model, (list, tuple)) else [model]
    first = roots[0]
    others = names_of_other_roots(names, first, {type(r).__name__ for r in roots[1:]})
    prefixes = RootNames()
    targets = []
    for other in roots[1:]:
        prefix = prefixes.name(other)
        targets += resolve(other, others.pop(prefix, []), where, prefix=prefix)
    if others:
        raise PlanError("%s: %s named in the plan but no module given for %s (pass every root the "
                        "job trains, in the order it first calls them)"
                        % (where, ", ".join(n for ns in others.values() for n in ns), " or ".join(others)))
    mine = [n for n in names if n not in {t for t, _ in targets}]
    targets = resolve(first, mine, where) + targets
    wrap(targets, data, first, where)
    return [name for name, _ in targets]


def checked_names(data, where):
    """The plan's module names, refused when one nests in another."""
    names = checkpoint_names(data)
    nested = [(a, b) for a in names for b in names if b.startswith(a + ".")]
    if nested:
        raise PlanError("%s: %r is checkpointed inside %r, which is checkpointed too; a plan's "
                        "modules must not nest (advise again)" % (where, nested[0][1], nested[0][0]))
    return names


def names_of_other_roots(names, model, class_names):
    """The names that belong to other roots, by prefix ("TextTower",
    "Encoder[1]"): those that start with one of `class_names` (optionally
    with an instance index) and are not modules of `model`."""
    from ..root_names import split_prefix

    modules = dict(model.named_modules())
    out = {}
    for n in names:
        parts = split_prefix(n)
        if parts is not None and parts[0] in class_names and _lookup(modules, n) is None:
            out.setdefault(parts[2], []).append(n)
    return out


def wrap(targets, data, model, where="plan"):
    """Checkpoints the (name, module) targets, selective ones as the plan says.

    Refused (PlanError, nothing changed) when a library already checkpoints
    a target, a module above it or one inside it: each would be recomputed
    twice per step, and the plan's numbers were solved for a job that does
    not checkpoint."""
    import torch

    doubled = job_checkpointing(model, targets)
    if doubled:
        lines = ["%s: %d module%s of the plan %s already checkpointed by the job, so the plan "
                 "would recompute %s twice per step:" % (where, len(doubled), "" if len(doubled) == 1 else "s",
                                                          "is" if len(doubled) == 1 else "are",
                                                          "it" if len(doubled) == 1 else "them")]
        for name, by, how in doubled:
            lines.append("  %r: %s checkpointed by %s" % (name, "is" if by == name else "%r is" % by, how))
        lines.append("Turn the job's checkpointing off to apply this plan (it was advised for a run "
                     "without it), or keep it and use no plan.")
        raise PlanError("\n".join(lines))
    selective = save_lists(data)
    for name, module in targets:
        checkpoint_module(torch, module, name, save=selective.get(name))
    if targets:
        no_cache_while_training(model)


_NO_CACHE_MARK = "__gcprof_no_cache__"


def no_cache_while_training(model):
    """Training forwards of every Hugging Face model in `model` run with
    use_cache=False: the model itself and the models it is made of, each
    config once at the outermost module holding it. An image-to-text model
    (VisionEncoderDecoderModel: TrOCR, Donut) has no use_cache of its own;
    its GPT-2 decoder has, and with it on the decoder's cross-attention keys
    and values came from the cache in the recomputation (saved in the
    forward, not recomputed: torch's CheckpointError, 48 tensors against 46).
    """
    seen = set()
    changed = False
    for module in model.modules():
        config = getattr(module, "config", None)
        if config is None or id(config) in seen:
            continue
        seen.add(id(config))
        changed = _no_cache_in(module) or changed
    return changed


def _no_cache_in(model):
    """Training forwards of a Hugging Face model run with use_cache=False.

    A key/value cache built in a training forward lives until the outputs are
    dropped, so it holds the very activations checkpointing frees; HF's own
    gradient checkpointing turns it off in training for that reason (and
    warns when asked for it). The same is done here: config.use_cache is set
    to False (this also reaches the forward already under way when the plan is
    applied from GCPROF_PLAN), and a training forward asked explicitly for the
    cache runs without it. generate() passes its own generation_config.use_cache
    and keeps the cache. Models without config.use_cache are left alone.
    """
    import inspect

    config = getattr(model, "config", None)
    if getattr(model, _NO_CACHE_MARK, False) or not isinstance(getattr(config, "use_cache", None), bool):
        return False
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False
    if "use_cache" not in params and not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return False
    import torch

    def hook(module, args, kwargs):
        if module.training and torch.is_grad_enabled() and kwargs.get("use_cache") is not False:
            kwargs = dict(kwargs)
            kwargs["use_cache"] = False
            return args, kwargs
        return None

    try:
        model.register_forward_pre_hook(hook, with_kwargs=True)
    except TypeError:
        pass  # PyTorch 1.x: no kwargs in hooks; config.use_cache still covers the default
    config.use_cache = False
    setattr(model, _NO_CACHE_MARK, True)
    return True


def exit_with(error):
    """Ends the job for a plan error: the message, no traceback, exit code 2."""
    global refused
    refused = True
    sys.stderr.write("gcprof: %s\n" % error)
    sys.stderr.flush()
    raise SystemExit(2)
