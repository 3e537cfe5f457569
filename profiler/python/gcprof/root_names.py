"""The names of roots other than the model, shared by the recording
(module_ranges.py) and plan application (env_plan.py, plan.py).

A job may call several modules that no module of the job calls: a loss
module, a frozen teacher, CLIP's second tower, three instances of one
`Encoder` class next to a fusion model. Each is named by its class; when
several live instances of one class are roots, the first keeps the bare
class name and the k-th (from 0) is `Class[k]`, so that their modules'
names differ ("Encoder.layers.0", "Encoder[1].layers.0") and a plan
applies to the instance it was made for. The brackets cannot occur in a
module's qualified name, so a prefix never collides with the model's names.

Indexes go by the order in which the instances are first called as roots,
with or without grad, which a deterministic job repeats when a plan is
applied. An instance that is gone frees its index: a loss module made anew
in every step keeps one name.
"""
import re
import weakref

_PREFIX = re.compile(r"^([A-Za-z_]\w*)(?:\[(\d+)\])?(?:\.|$)")


def prefix_of(class_name, index):
    return class_name if index == 0 else "%s[%d]" % (class_name, index)


def split_prefix(name):
    """("Encoder", 1, "Encoder[1]") for "Encoder[1].layers.0"; None when the
    name does not start with a class-like component."""
    m = _PREFIX.match(name)
    if m is None:
        return None
    index = int(m.group(2)) if m.group(2) is not None else 0
    return m.group(1), index, prefix_of(m.group(1), index)


class RootNames:
    def __init__(self):
        self._by_class = {}  # class name -> [weakref or None], by index

    def name(self, root, assign=True):
        """The prefix of `root`: its class name, with [k] for the k-th live
        instance; None when it has none yet and `assign` is False."""
        cls = type(root).__name__
        slots = self._by_class.setdefault(cls, [])
        free = None
        for i, ref in enumerate(slots):
            held = ref() if ref is not None else None
            if held is root:
                return prefix_of(cls, i)
            if held is None and free is None:
                free = i
        if not assign:
            return None
        if free is None:
            slots.append(None)
            free = len(slots) - 1
        try:
            slots[free] = weakref.ref(root)
        except TypeError:  # a module class with __slots__ and no __weakref__: held
            slots[free] = lambda: root
        return prefix_of(cls, free)
