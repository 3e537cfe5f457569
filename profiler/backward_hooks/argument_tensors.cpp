// The walk of a module call's arguments (argument_tensors.h).
#define PY_SSIZE_T_CLEAN
#include "argument_tensors.h"

#include <Python.h>

#include <torch/csrc/autograd/function.h>

#include <algorithm>

#include "hooks.h"

namespace gcprof_hooks {
namespace {

constexpr int kMaxDepth = 4;  // tensors.py's _MAX_DEPTH

PyObject* g_tensor_bytes = nullptr;  // tensors.tensor_bytes(value) for what C++ leaves
PyObject* g_grad_nodes = nullptr;    // tensors.grad_nodes(value) likewise

bool exactContainer(PyObject* v) {
  return PyTuple_CheckExact(v) || PyList_CheckExact(v) || PyDict_CheckExact(v);
}

// A value python's walk would enter that this one does not follow exactly:
// a tensor subclass, a tuple/list/dict subclass. -1: a python error.
int needsPython(PyObject* v) {
  if (THPVariable_CheckExact(v) || exactContainer(v)) return 0;
  if (PyTuple_Check(v) || PyList_Check(v) || PyDict_Check(v)) return 1;
  int is_tensor = PyObject_IsInstance(v, reinterpret_cast<PyObject*>(THPVariableClass));
  return is_tensor;
}

// Calls f(tensor) for the tensors in v as tensors.iter_tensors walks them;
// 1 when it met something python must walk (nothing more is visited), -1 on error.
template <typename F>
int walk(PyObject* v, int depth, F& f) {
  if (THPVariable_CheckExact(v)) {
    f(THPVariable_Unpack(v));
    return 0;
  }
  if (depth < kMaxDepth && exactContainer(v)) {
    if (PyDict_CheckExact(v)) {
      Py_ssize_t pos = 0;
      PyObject *key, *item;
      while (PyDict_Next(v, &pos, &key, &item)) {
        int r = walk(item, depth + 1, f);
        if (r) return r;
      }
      return 0;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
    PyObject** items = PySequence_Fast_ITEMS(v);
    for (Py_ssize_t i = 0; i < n; ++i) {
      int r = walk(items[i], depth + 1, f);
      if (r) return r;
    }
    return 0;
  }
  return needsPython(v);
}

int64_t bytesOf(const at::Tensor& t) {
  try {
    return static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size());
  } catch (...) {  // nested / sparse layouts without a flat size (tensors.py skips them)
    return 0;
  }
}

}  // namespace

void usePythonWalks(PyObject* tensor_bytes, PyObject* grad_nodes) {
  Py_INCREF(tensor_bytes);
  Py_INCREF(grad_nodes);
  Py_XSETREF(g_tensor_bytes, tensor_bytes);
  Py_XSETREF(g_grad_nodes, grad_nodes);
}

int argumentGradNodes(PyObject* v, std::vector<NodePtr>& out) {
  size_t first = out.size();
  auto add = [&](const at::Tensor& t) {
    NodePtr node = t.grad_fn();
    if (!node) return;
    for (size_t i = first; i < out.size(); ++i)
      if (out[i] == node) return;
    out.push_back(std::move(node));
  };
  int r = walk(v, 0, add);
  if (r != 0) out.resize(first);
  return r;
}

int64_t tensorBytes(PyObject* v, std::vector<const void*>& seen) {
  int64_t total = 0;
  auto add = [&](const at::Tensor& t) {
    const void* impl = t.unsafeGetTensorImpl();
    if (std::find(seen.begin(), seen.end(), impl) != seen.end()) return;
    seen.push_back(impl);
    total += bytesOf(t);
  };
  int r = walk(v, 0, add);
  if (r == 0) return total;
  if (r < 0) return -1;
  PyObject* py = PyObject_CallOneArg(g_tensor_bytes, v);
  if (!py) return -1;
  int64_t bytes = PyLong_AsLongLong(py);
  Py_DECREF(py);
  return bytes == -1 && PyErr_Occurred() ? -1 : bytes;
}

bool gradNodes(PyObject* v, std::vector<NodePtr>& out) {
  int r = argumentGradNodes(v, out);
  if (r == 0) return true;
  if (r < 0) return false;
  PyObject* list = PyObject_CallOneArg(g_grad_nodes, v);
  if (!list) return false;
  PyObject* fast = PySequence_Fast(list, "tensors.grad_nodes: not a list");
  Py_DECREF(list);
  if (!fast) return false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  for (Py_ssize_t i = 0; i < n; ++i) {
    torch::autograd::Node* node = nodeOf(PySequence_Fast_GET_ITEM(fast, i));
    // A node behind a grad_fn object is owned (refcounted) elsewhere: share it.
    if (node) out.push_back(shareNode(node));
  }
  Py_DECREF(fast);
  return true;
}

}  // namespace gcprof_hooks
