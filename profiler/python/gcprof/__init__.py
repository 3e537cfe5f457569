"""gcprof's python side: plan application from code, and the recording shim.

    import gcprof
    gcprof.apply_plan(model, "plan.json")   # checkpoint the planned modules

Recording needs no import: `gcprof record` loads the shim through
sitecustomize (docs/python-shim.md). Importing this package imports neither
torch nor the plan code; they load on first use, so the shim's start-up in
every recorded python process stays under a millisecond or so.
"""
__all__ = ["apply_plan", "load_plan", "PlanError"]


def __getattr__(name):
    if name in __all__:
        from .runtime import plan
        return getattr(plan, name)
    raise AttributeError("module 'gcprof' has no attribute %r" % name)
