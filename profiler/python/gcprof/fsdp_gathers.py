"""FSDP2 parameter gathers marked as user ranges `fsdp.unshard <module>`.

FSDP2 (`fully_shard`) gathers a module's parameters before its forward and
again before its backward; with checkpointing, the recomputation in backward
uses the parameters gathered for backward. The advisor's replay of a
checkpointed unit's forward must therefore not replay the forward's gather
(docs/distributed.md): these ranges tell it which allocations those are.

Nothing is imported here: the wrappers are installed when the first step
opens (the model is wrapped by then), and only when the job itself has
imported FSDP2.
"""
import functools
import sys

from . import failsafe
from .native import USER

_PARAM_GROUP = "torch.distributed.fsdp._fully_shard._fsdp_param_group"
PREFIX = "fsdp.unshard "


class FsdpGathers:
    def __init__(self, torch, recorder):
        self._torch = torch
        self._rec = recorder

    def install(self, steps):
        steps.at_first_step(self.mark)

    def mark(self):
        """Wraps FSDP2's gathers if the job has imported FSDP2 by its first step."""
        group = sys.modules.get(_PARAM_GROUP)
        cls = getattr(group, "FSDPParamGroup", None)
        if cls is None:
            return
        for name in ("unshard", "wait_for_unshard"):
            self._wrap(cls, name)

    def _wrap(self, cls, name):
        original = getattr(cls, name)
        if getattr(original, "_gcprof_gather", False):
            return
        rec = self._rec

        @functools.wraps(original)
        def marked(group, *args, **kwargs):
            rid = rec.range_start(PREFIX + (getattr(group, "_module_fqn", "") or "(root)"), USER)
            try:
                return original(group, *args, **kwargs)
            finally:
                rec.range_end(rid)

        marked._gcprof_gather = True
        setattr(cls, name, marked)
        failsafe.on_failure(lambda: setattr(cls, name, original))
