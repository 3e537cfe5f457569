"""The qualified names module_ranges.py records module calls under.

A root call (no module forward active on the thread) names its subtree by
walking root.named_modules(), once per root call, so that modules added
later are named too. The first root called with grad enabled is the model:
its names carry no prefix ("", "layers.3.attn"), unless it has no parameters:
a data transform (torchvision's are modules) called in the job's process
before the model, as a DataLoader without workers does, is not the model. Other roots are prefixed
with their class name (root_names.py); a known sub-module called on its own
keeps its name. With the C++ extension, module_tree.cpp first checks that
the model's tree is the one walked before, and the names are then kept
without a walk in python.
"""
import weakref

from .root_names import RootNames


def has_parameters(module):
    """False for a module that cannot be the model being trained: it (and
    every module under it) holds no parameter. Shared with env_plan.py, which
    must find the same model the recording named."""
    return next(module.parameters(), None) is not None


class TreeNames:
    def __init__(self, grad_enabled, same_tree):
        self._grad_enabled = grad_enabled
        self.same_tree = same_tree  # module_tree.cpp's, or None: walk each time
        self.names = {}           # id(module) -> qualified name
        self._model_names = None  # the model's own names, as its last walk gave them
        self._primary = None      # weakref to the first root module called with grad
        self._roots = RootNames()  # the names of the other roots

    def primary(self):
        """The model: the first root module called (None before, or once it is gone)."""
        return self._primary() if self._primary is not None else None

    def name_tree(self, root):
        """Names root's tree into self.names; False when they are those of the call before."""
        primary = self.primary()
        # The model is the first root called with grad enabled, as a plan is
        # applied (env_plan.py): a distillation's teacher runs first, under
        # no_grad, and must not take the student's unprefixed names.
        if primary is None and self._grad_enabled() and has_parameters(root):
            self._primary = weakref.ref(root)
            primary = root
        if root is primary:
            if self.same_tree is not None and self.same_tree(root) and \
                    self._model_names is not None:
                if self.names is self._model_names:
                    return False
                self.names = self._model_names  # drops the other roots' names, as a walk does
                return True
            self.names = self._model_names = {id(m): n for n, m in root.named_modules()}
            return True
        # A root named before keeps its name; a known sub-module called on its
        # own keeps its qualified name; a new root is named by its class, the
        # k-th live instance of one class as `Class[k]` (root_names.py).
        prefix = self._roots.name(root, assign=False) or self.names.get(id(root)) or \
            self._roots.name(root)
        if self.names is self._model_names:
            self.names = dict(self.names)  # the model's stay as walked (same_tree)
        self.names.update((id(m), n) for n, m in root.named_modules(prefix=prefix))
        return True
