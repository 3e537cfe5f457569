"""A backward range per module call, without full backward hooks.

Full backward hooks (register_module_full_backward_hook) wrap a module's
inputs and outputs in BackwardHookFunction, which breaks in-place operations
downstream (nn.ReLU(inplace=True) after a hooked Linear fails) and adds
graph nodes. Instead we hook the autograd nodes that already exist:

start  a pre-hook on the grad_fn of each output tensor: it fires when the
       gradient with respect to that output is complete, i.e. when the
       module's backward can begin. The first one to fire opens the range.
end    a pre-hook on the grad_fn of each input tensor, captured *before* the
       forward ran (an in-place module rebinds its input's grad_fn): it fires
       when the gradient with respect to that input is complete, i.e. the
       module's backward is done. The range closes when all have fired.
       Inputs without grad_fn (token ids, data, leaves): when the module's own
       subgraph above the parameters is small (<= _OWN_GRAPH_LIMIT nodes, e.g.
       an embedding or the first Linear), post-hooks on those nodes close the
       range when the last one ran; otherwise the range closes when the
       backward pass ends (Engine.queue_callback), which is exact for the root.
Safety net: every range still open when its backward pass ends is closed
then (a node that never ran, a pruned input).

Nothing here keeps a tensor or a node alive: the hooks live on nodes the
graph owns anyway, and their closures hold only a BackwardRange (a name and
an id). A graph freed without backward drops the hooks with it. A second
backward through a retained graph is not recorded again (state is closed).
"""
import functools

from . import failsafe
from .native import BACKWARD

_OWN_GRAPH_LIMIT = 8
_WAITING, _OPEN, _CLOSED = 0, 1, 2


class BackwardRange:
    __slots__ = ("name", "range_id", "state", "pending", "task", "empty")

    def __init__(self, name, pending, empty):
        self.name = name
        self.range_id = 0
        self.state = _WAITING
        self.pending = pending  # end nodes still to fire
        self.task = None
        self.empty = empty      # outputs are inputs (Identity, p=0 Dropout): ends at start


class NodeHooks:
    """What one node's single pre-hook does: ends first (innermost first), then starts
    (outermost first), so ranges meeting at a node nest properly."""
    __slots__ = ("ends", "starts")

    def __init__(self):
        self.ends = []
        self.starts = []


class BackwardRanges:
    def __init__(self, torch, recorder):
        self._rec = recorder
        self._range_start = recorder.range_start
        self._range_end = recorder.range_end
        engine = torch.autograd.Variable._execution_engine
        self._queue_callback = engine.queue_callback
        self._task_id = getattr(torch._C, "_current_graph_task_id", lambda: 0)
        self._open = {}  # graph task id -> set of open BackwardRange

    def in_backward(self):
        """For PyTorch without _current_graph_task_id (1.13): a backward pass
        that opened a module's range is running (recomputation happens inside one)."""
        return bool(self._open)

    def arm(self, name, output_nodes, input_nodes, own, callers):
        """Called after a module's forward with its outputs' and inputs' nodes.

        `own` maps id(node) -> (node, NodeHooks) for the nodes met inside this
        call; `callers` are the same dicts of the calls it is nested in,
        innermost last. A node's dispatcher is looked up there first (one node,
        one pre-hook: ranges meeting at a node nest in order); a new one goes
        into the innermost caller's dict (only this call's inputs and outputs
        get one, and those are alive in the caller anyway), or `own` at the root.
        """
        if input_nodes:
            if len(output_nodes) == 1:
                out = output_nodes[0]
                end_nodes = [n for n in input_nodes if n is not out]
            else:
                output_ids = {id(n) for n in output_nodes}
                end_nodes = [n for n in input_nodes if id(n) not in output_ids]
            br = BackwardRange(name, len(end_nodes), empty=not end_nodes)
            for node in end_nodes:
                self._hooks_of(node, own, callers).ends.append(br)
        else:
            own_graph = _own_subgraph(output_nodes) or []
            br = BackwardRange(name, len(own_graph), empty=False)
            done = functools.partial(self._node_ran, br)
            for node in own_graph:
                node.register_hook(done)
        for node in output_nodes:
            # Callers arm after their callees: put them first.
            self._hooks_of(node, own, callers).starts.insert(0, br)

    def _hooks_of(self, node, own, callers):
        key = id(node)
        entry = own.get(key)
        if entry is None:
            for scope in reversed(callers):
                entry = scope.get(key)
                if entry is not None:
                    break
            else:
                hooks = NodeHooks()
                node.register_prehook(functools.partial(self._dispatch, hooks))
                (callers[-1] if callers else own)[key] = (node, hooks)
                return hooks
        return entry[1]

    def _dispatch(self, hooks, grad_outputs):
        if failsafe.failed():
            return None
        try:
            for br in hooks.ends:
                self._count_down(br)
            for br in hooks.starts:
                self._start(br)
        except Exception as exc:
            failsafe.internal_error("a backward node hook", exc)
        return None

    def _start(self, br):
        if br.state != _WAITING:
            return
        br.state = _OPEN
        br.range_id = self._range_start(br.name, BACKWARD)
        if br.empty:
            br.state = _CLOSED
            self._range_end(br.range_id)
            return
        task = br.task = self._task_id()
        open_in_task = self._open.get(task)
        if open_in_task is None:
            open_in_task = self._open[task] = set()
            self._queue_callback(functools.partial(self._backward_done, task))
        open_in_task.add(br)

    def _node_ran(self, br, grad_inputs, grad_outputs):
        try:
            self._count_down(br)
        except Exception as exc:
            failsafe.internal_error("a backward node post-hook", exc)
        return None

    def _count_down(self, br):
        br.pending -= 1
        if br.pending > 0:
            return
        if br.state == _OPEN:
            br.state = _CLOSED
            self._range_end(br.range_id)
            open_in_task = self._open.get(br.task)
            if open_in_task is not None:
                open_in_task.discard(br)
        elif br.state == _WAITING:  # its outputs' backward never ran: nothing to record
            br.state = _CLOSED

    def _backward_done(self, task):
        try:
            for br in list(self._open.pop(task, ())):
                if br.state == _OPEN:
                    br.state = _CLOSED
                    self._range_end(br.range_id)
        except Exception as exc:
            failsafe.internal_error("the end-of-backward callback", exc)


def _own_subgraph(output_nodes):
    """The nodes between a module's outputs and its parameters, when few.

    Only meaningful when no input has a grad_fn: then everything reachable
    from the outputs down to AccumulateGrad leaves is the module's own work.
    Returns None when the walk exceeds the limit (the root, a deep stack).
    """
    seen = {}
    stack = list(output_nodes)
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or type(node).__name__ == "AccumulateGrad":
            continue
        seen[id(node)] = node
        if len(seen) > _OWN_GRAPH_LIMIT:
            return None
        stack.extend(fn for fn, _ in node.next_functions)
    return list(seen.values())
