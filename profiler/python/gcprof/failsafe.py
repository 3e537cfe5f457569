"""The shim must never break the job it observes.

Any internal error ends profiling: one warning line on stderr, every hook the
shim installed is removed (teardown callbacks), and the job continues
unprofiled. Plan errors are not internal errors; they are reported by plan.py.
"""
import sys

_teardowns = []
_failed = False


def on_failure(teardown):
    """Registers a callable that undoes something the shim installed."""
    _teardowns.append(teardown)


def failed():
    return _failed


def internal_error(where, exc):
    """Disables the shim after an unexpected exception inside `where`."""
    global _failed
    if _failed:
        return
    _failed = True
    try:
        sys.stderr.write("gcprof: internal error in %s (%s: %s); the job continues unprofiled\n"
                         % (where, type(exc).__name__, exc))
        sys.stderr.flush()
    except Exception:
        pass
    while _teardowns:
        try:
            _teardowns.pop()()
        except Exception:
            pass


def remove_all():
    """Removes every hook the shim installed (`gcprof attach` detaching); no warning."""
    while _teardowns:
        try:
            _teardowns.pop()()
        except Exception:
            pass
