"""Finding the tensors in a module call's arguments and results.

Module inputs and outputs are tensors or small containers of them (tuples,
lists, dicts, dataclass-like outputs are ignored). The walk is bounded in depth
and never keeps a reference to what it visits.
"""
_MAX_DEPTH = 4


def iter_tensors(value, tensor_type, depth=0):
    if isinstance(value, tensor_type):
        yield value
    elif depth < _MAX_DEPTH:
        if isinstance(value, (tuple, list)):
            for item in value:
                yield from iter_tensors(item, tensor_type, depth + 1)
        elif isinstance(value, dict):
            for item in value.values():
                yield from iter_tensors(item, tensor_type, depth + 1)


def tensor_bytes(value, tensor_type, seen=None):
    """Logical bytes (elements x element size) of the tensors in `value`, each
    tensor counted once: self-attention is called as attn(h, h, h), and the
    advisor finds a checkpoint's arguments by these bytes
    (advisor/chain/checkpoint_arguments.h). `seen` (ids) carries over calls,
    so a tensor in both the arguments and the keywords counts once."""
    if seen is None and (type(value) is tensor_type or (type(value) is tuple and len(value) == 1
                                                          and type(value[0]) is tensor_type)):
        t = value if type(value) is tensor_type else value[0]  # the common case, no generator
        return t.numel() * t.element_size()
    if seen is None:
        seen = set()
    total = 0
    for t in iter_tensors(value, tensor_type):
        if id(t) in seen:
            continue
        seen.add(id(t))
        try:
            total += t.numel() * t.element_size()
        except Exception:  # nested / sparse layouts without a flat size
            pass
    return total


def grad_nodes(value, tensor_type):
    """The distinct autograd nodes that produced the tensors in `value`.

    Leaves (tensors without grad_fn) are skipped: their gradient only gets
    accumulated, there is no node whose pre-hook marks it complete.
    """
    if type(value) is tensor_type or (type(value) is tuple and len(value) == 1
                                      and type(value[0]) is tensor_type):
        node = (value if type(value) is tensor_type else value[0]).grad_fn
        return [node] if node is not None else []
    nodes = []
    seen = set()
    for t in iter_tensors(value, tensor_type):
        node = t.grad_fn
        if node is not None and id(node) not in seen:
            seen.add(id(node))
            nodes.append(node)
    return nodes


def storage_address(value, tensor_type):
    """The address of the memory behind `value` when it is one tensor, else 0.

    The storage's address (not the view's data pointer) is what the
    allocator returned, so it equals the recorded allocation's address.
    """
    if type(value) is tuple and len(value) == 1:
        value = value[0]
    if not isinstance(value, tensor_type):
        return 0
    try:
        storage = value.untyped_storage() if hasattr(value, "untyped_storage") else value.storage()
        return storage.data_ptr()
    except Exception:  # tensors without storage (sparse, meta, functional wrappers)
        return 0
