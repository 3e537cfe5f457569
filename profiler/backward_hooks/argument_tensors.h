// The tensors of a module call's arguments, walked as the python shim's
// tensors.py walks them (iter_tensors, tensor_bytes, grad_nodes), for the
// forward hooks (forward_hooks.cpp). What this walk does not follow exactly
// (a tensor subclass, a container subclass) goes to tensors.py itself.
#pragma once

#include <Python.h>

#include <torch/csrc/autograd/python_variable.h>

#include "torch_nodes.h"

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace gcprof_hooks {

// tensors.tensor_bytes and tensors.grad_nodes, called for what C++ leaves to
// python; references are taken.
void usePythonWalks(PyObject* tensor_bytes, PyObject* grad_nodes);

// Appends the distinct grad_fn nodes of the tensors in `v`, in walk order.
// 0 when done, 1 when it met something python must walk, -1 on a python
// error; on 1 and -1 `out` is as it was.
int argumentGradNodes(PyObject* v, std::vector<NodePtr>& out);

// tensors.tensor_bytes(v), each tensor once (`seen` carries over calls:
// attn(h, h, h) passes h's bytes once); -1 on a python error.
int64_t tensorBytes(PyObject* v, std::vector<const void*>& seen);

// tensors.grad_nodes(v): distinct nodes in walk order; false on a python error.
bool gradNodes(PyObject* v, std::vector<NodePtr>& out);

}  // namespace gcprof_hooks
