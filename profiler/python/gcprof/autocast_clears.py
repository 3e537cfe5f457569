"""Autocast's cast cache, cleared, marked as the user range `autocast.clear_cache`.

Under autocast, the lower-precision copy of each parameter (the bf16 weight a
Linear multiplies by) is made once and kept in autocast's cache until the
outermost autocast context exits and clears it. In a run without
checkpoints autograd keeps those copies to the backward anyway; in a
checkpointed forward it does not, and the cache alone holds them until the
clear, where the advisor's replay would otherwise drop them when the
segment's forward ends (HF Whisper under bf16 autocast: 4.7 MB of weight
copies alive at the peak, the prediction 1.6% low). The range tells the
advisor when that is.

torch.amp.autocast.__exit__ (and the recomputation's autocast inside
torch.utils.checkpoint) calls `torch.clear_autocast_cache()` through the
module attribute, so wrapping that attribute sees every clear.
"""
import functools

from . import failsafe
from .native import USER

NAME = "autocast.clear_cache"

_recorder = None  # the latest install's: attach may install the hooks again


def install(torch, recorder):
    global _recorder
    _recorder = recorder
    original = getattr(torch, "clear_autocast_cache", None)
    if original is None or getattr(original, "_gcprof_clear", False):
        return

    # Only a clear on leaving an enabled autocast can drop casts: a job without
    # autocast gets no range (torch.utils.checkpoint's recomputation enters a
    # disabled autocast, and clears on leaving it, every time).
    enabled = getattr(torch._C, "_is_any_autocast_enabled", None) or (
        lambda: torch.is_autocast_enabled() or torch.is_autocast_cpu_enabled())

    @functools.wraps(original)
    def marked(*args, **kwargs):
        rec = _recorder
        rid = rec.range_start(NAME, USER) if rec is not None and enabled() else 0
        try:
            return original(*args, **kwargs)
        finally:
            if rid:
                rec.range_end(rid)

    marked._gcprof_clear = True
    torch.clear_autocast_cache = marked
    failsafe.on_failure(lambda: setattr(torch, "clear_autocast_cache", original))
