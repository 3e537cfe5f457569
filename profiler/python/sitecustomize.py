"""gcprof's python shim entry point (profiler/python is put on PYTHONPATH by `gcprof record`).

Python imports the first `sitecustomize` on sys.path at start-up; this is it.
It does two things and costs nothing measurable when neither applies:
1. When GCPROF_DB or GCPROF_PLAN is set, arm the gcprof hooks; they install
   themselves once the job imports torch (gcprof/startup.py).
2. Run the sitecustomize that would have been imported without this one
   (a distribution's or a virtualenv's), so the job behaves as before.
"""
import os
import sys


def _start_gcprof():
    if not (os.environ.get("GCPROF_DB") or os.environ.get("GCPROF_PLAN")):
        return
    try:
        from gcprof import startup
        startup.start()
    except Exception as exc:  # never break the job
        sys.stderr.write("gcprof: python shim not started (%s: %s); the job continues unprofiled\n"
                         % (type(exc).__name__, exc))


def _chain_next_sitecustomize():
    import importlib.machinery
    import importlib.util

    # Skip every gcprof shim folder (this one, or another checkout's on the
    # path too), otherwise two copies would chain to each other forever.
    rest = [p for p in sys.path
            if not os.path.isfile(os.path.join(p or os.curdir, "gcprof", "startup.py"))]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    # `import sitecustomize` in the job then finds the chained module, as it would have.
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)  # its errors surface exactly as they would have


_start_gcprof()
_chain_next_sitecustomize()
