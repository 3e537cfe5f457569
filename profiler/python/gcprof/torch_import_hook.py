"""Run a callback right after `import torch` finishes, without importing torch.

Importing torch from sitecustomize would add a second or more to every python
process started under `gcprof record` (including ones that never use torch)
and could change import order. Instead a meta-path finder waits for the
"torch" import, lets the regular finders locate it, and wraps that one
loader's exec_module so the callback runs once torch's __init__ completed.
Until then each import costs the finder one string comparison.
"""
import sys

from . import failsafe


class TorchImportWatcher:
    def __init__(self, on_torch_loaded):
        self._callback = on_torch_loaded
        self._searching = False

    def install(self):
        if "torch" in sys.modules:
            self._run(sys.modules["torch"])
        else:
            sys.meta_path.insert(0, self)

    def remove(self):
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" or self._searching:
            return None
        self._searching = True
        try:
            spec = _find_with_other_finders(self, fullname, path, target)
        finally:
            self._searching = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        self.remove()
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            original(module)
            try:
                del loader.exec_module  # back to the class's method
            except AttributeError:
                pass
            self._run(module)

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError) as exc:  # a loader with __slots__
            failsafe.internal_error("the torch import hook", exc)
        return spec

    def _run(self, torch_module):
        try:
            self._callback(torch_module)
        except Exception as exc:
            failsafe.internal_error("set-up after import torch", exc)


def _find_with_other_finders(me, fullname, path, target):
    for finder in list(sys.meta_path):
        if finder is me or not hasattr(finder, "find_spec"):
            continue
        spec = finder.find_spec(fullname, path, target)
        if spec is not None:
            return spec
    return None
