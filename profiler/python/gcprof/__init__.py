"""gcprof's python side: plan application from code, and the recording shim.

    import gcprof
    gcprof.apply_plan(model, "plan.json")   # checkpoint the planned modules

Recording needs no import: `gcprof record` loads the shim through
sitecustomize (docs/python-shim.md). Importing this package does not import
torch; apply_plan does.
"""
from .plan import PlanError, apply_plan, load_plan

__all__ = ["apply_plan", "load_plan", "PlanError"]
