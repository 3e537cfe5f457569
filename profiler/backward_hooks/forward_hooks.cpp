// The python shim's per-module-call forward work in C++.
//
// module_ranges.py's hooks run on every module call of the process. On the
// python path one call costs ~75 python-level calls (tls, clock, grad mode,
// graph task id, a _Frame, tensor sizes, two ctypes calls, arm, ...). Here
// `forward_pre(module, args)` and `forward_post(module, args, kwargs,
// output)` do the common call in one C function each: the module's name comes
// from a table python fills once per root call (set_names), the range goes
// to the injector directly, and the backward range is armed without a python
// list or a grad_fn object.
//
// What is recorded is module_ranges.py's, event for event (the test
// python.shim.native_hooks compares both paths): the same range start, the
// same input/output bytes, the same in-place detection, the same arming.
// Everything else is left to python, which gets the call instead:
//   - a root call (no module forward active on the thread): names the tree,
//     may open a step, the torch.compile marker, the operator mode;
//   - a call while autograd runs a backward pass (a checkpoint's recompute);
//   - arguments holding a tensor subclass or a container subclass, whose
//     walk python does with its own rules (tensors.py).
// Python's frame then sits on this stack and its post-hook runs python's
// _finish. A changed input version (an in-place module) calls python's
// _note_inplace. So the C++ stack is the only stack: python never keeps one
// when these hooks are installed.
//
// Per thread, the stack's entries keep their vectors' capacity when popped,
// so the common call allocates nothing.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/autograd/graph_task.h>
#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <type_traits>
#include <utility>
#include <vector>

#include "hooks.h"

namespace {

using gcprof_hooks::g_range_end;
using gcprof_hooks::g_range_end_io;
using gcprof_hooks::g_range_start;
using torch::autograd::Node;

// What a tensor's grad_fn() holds its node with (an intrusive_ptr in this torch).
using NodePtr = std::decay_t<decltype(std::declval<at::Tensor>().grad_fn())>;

constexpr int kUserPhase = 0;     // GCPROF_USER
constexpr int kForwardPhase = 1;  // GCPROF_FORWARD
constexpr int kMaxDepth = 4;      // tensors.py's _MAX_DEPTH

// A module's qualified name: UTF-8 for the injector, the str for python.
struct Name {
  Name(std::string u, PyObject* p) : utf8(std::move(u)), py(p) { Py_INCREF(py); }
  ~Name() {
    if (Py_IsInitialized() && PyGILState_Check()) Py_DECREF(py);  // else left: exit
  }
  Name(const Name&) = delete;
  Name& operator=(const Name&) = delete;
  std::string utf8;
  PyObject* py;
  mutable bool inplace_noted = false;  // python's _note_inplace has seen this module
};
using NamePtr = std::shared_ptr<const Name>;

// module object -> name; replaced by set_names at each root call (python's
// _names dict, keyed by id(module) the same way). Read and written under the GIL.
std::unordered_map<PyObject*, NamePtr> g_names;
bool g_recording = true;    // python's _recording, refreshed at each root call
PyObject* g_shim = nullptr; // ModuleRanges: the slow paths
PyObject* g_tensor_bytes = nullptr;  // tensors.tensor_bytes(value) for what C++ leaves
PyObject* g_grad_nodes = nullptr;    // tensors.grad_nodes(value) likewise
uint64_t g_hook_ns = 0;
uint64_t g_hook_calls = 0;

enum class Kind : uint8_t { Skip, Native, Python };

struct Entry {
  Kind kind = Kind::Skip;
  bool scope = false;  // a recorded forward call (a caller for arm's `root`)
  bool grad = false;   // grad mode was on: inputs were captured
  uint64_t range_id = 0;
  NamePtr name;
  std::vector<NodePtr> inputs;
  std::vector<std::pair<at::Tensor, int64_t>> versions;  // held only during the call
  PyObject* frame = nullptr;  // Kind::Python: python's _Frame (owned)

  void clear() {
    kind = Kind::Skip;
    scope = grad = false;
    range_id = 0;
    name.reset();
    inputs.clear();
    versions.clear();
    Py_CLEAR(frame);
  }
};

struct Stack {
  // [0, depth) in use; the rest keep their capacity. A deque: an entry stays
  // where it is while deeper calls push.
  std::deque<Entry> entries;
  size_t depth = 0;
  size_t scopes = 0;  // entries in use with scope set
  Entry& push() {
    if (depth == entries.size()) entries.emplace_back();
    return entries[depth++];
  }
};
thread_local Stack t_stack;

uint64_t nowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

struct HookTimer {
  uint64_t start = nowNs();
  bool count;
  explicit HookTimer(bool c) : count(c) {}
  ~HookTimer() {
    g_hook_ns += nowNs() - start;
    if (count) g_hook_calls++;
  }
};

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

// tensors.tensor_bytes(v), each tensor once (`seen` carries over calls:
// attn(h, h, h) passes h's bytes once); -1 on a python error.
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

// tensors.grad_nodes(v): distinct nodes in walk order; false on a python error.
bool gradNodes(PyObject* v, std::vector<NodePtr>& out) {
  size_t first = out.size();
  auto add = [&](const at::Tensor& t) {
    NodePtr node = t.grad_fn();
    if (!node) return;
    for (size_t i = first; i < out.size(); ++i)
      if (out[i] == node) return;
    out.push_back(std::move(node));
  };
  int r = walk(v, 0, add);
  if (r == 0) return true;
  out.resize(first);
  if (r < 0) return false;
  PyObject* list = PyObject_CallOneArg(g_grad_nodes, v);
  if (!list) return false;
  PyObject* fast = PySequence_Fast(list, "tensors.grad_nodes: not a list");
  Py_DECREF(list);
  if (!fast) return false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  for (Py_ssize_t i = 0; i < n; ++i) {
    Node* node = gcprof_hooks::nodeOf(PySequence_Fast_GET_ITEM(fast, i));
    // A node behind a grad_fn object is owned (refcounted) elsewhere: share it.
    if (node) out.push_back(NodePtr::unsafe_reclaim_from_nonowning(node));
  }
  Py_DECREF(fast);
  return true;
}

// The common call: a known module, not root, not in backward, plain arguments.
// False (nothing pushed, no python error) when python must take it.
bool fastPre(Stack& s, PyObject* module, PyObject* args) {
  Entry& e = s.push();
  if (!g_recording) return true;  // Skip
  auto it = g_names.find(module);
  if (it == g_names.end()) return true;  // Skip: outside every named tree
  e.grad = torch::autograd::GradMode::is_enabled();
  if (e.grad) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* a = PyTuple_GET_ITEM(args, i);
      if (THPVariable_CheckExact(a)) {
        const at::Tensor& t = THPVariable_Unpack(a);
        e.versions.emplace_back(t, t._version());
      }
    }
    auto add = [&](const at::Tensor& t) {
      NodePtr node = t.grad_fn();
      if (!node) return;
      for (const auto& known : e.inputs)
        if (known == node) return;
      e.inputs.push_back(std::move(node));
    };
    int r = walk(args, 0, add);
    if (r != 0) {
      s.depth--;
      e.clear();
      if (r < 0) PyErr_Clear();  // python's walk will meet the same error and say so
      return false;
    }
  }
  e.kind = Kind::Native;
  e.scope = true;
  e.name = it->second;
  e.range_id = g_range_start(e.name->utf8.c_str(), kForwardPhase);
  s.scopes++;
  return true;
}

// Python's _native_pre(module, args, root) -> _Frame or None (not recorded).
bool slowPre(Stack& s, PyObject* module, PyObject* args) {
  bool root = s.depth == 0;
  PyObject* frame = PyObject_CallMethod(g_shim, "_native_pre", "OOO", module, args,
                                        root ? Py_True : Py_False);
  if (!frame) return false;
  Entry& e = s.push();
  if (frame == Py_None) {
    Py_DECREF(frame);
    return true;
  }
  e.kind = Kind::Python;
  e.frame = frame;
  PyObject* recompute = PyObject_GetAttrString(frame, "recompute");
  if (!recompute) return false;
  e.scope = !PyObject_IsTrue(recompute);
  Py_DECREF(recompute);
  if (e.scope) s.scopes++;
  return true;
}

PyObject* py_forward_pre(PyObject*, PyObject* const* argv, Py_ssize_t argc) {
  if (argc != 2 || !PyTuple_Check(argv[1])) {
    PyErr_SetString(PyExc_TypeError, "forward_pre(module, args: tuple)");
    return nullptr;
  }
  if (!g_shim) Py_RETURN_NONE;
  HookTimer timer(true);
  Stack& s = t_stack;
  try {
    bool done = s.depth > 0 && torch::autograd::get_current_graph_task_id() == -1 &&
                fastPre(s, argv[0], argv[1]);
    if (!done && !slowPre(s, argv[0], argv[1])) return nullptr;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  Py_RETURN_NONE;
}

// A call that changed an input in place: python's _note_inplace reports the
// module once (`inplace <name>`) and leaves the zero-length user range
// `inplace output 0x<address>` (the returned tensor's storage). Its later
// calls with a plain tensor output leave that range from here: through python
// each cost ~50 us of a cold call (17 a ResNet-18 step, bench/RESULTS.md).
bool noteInplace(const Entry& e, PyObject* output) {
  PyObject* v = output;
  if (PyTuple_CheckExact(v) && PyTuple_GET_SIZE(v) == 1) v = PyTuple_GET_ITEM(v, 0);
  if (!e.name->inplace_noted || !THPVariable_CheckExact(v)) {
    PyObject* r = PyObject_CallMethod(g_shim, "_note_inplace", "OO", e.name->py, output);
    if (!r) return false;
    Py_DECREF(r);
    e.name->inplace_noted = true;
    return true;
  }
  const void* address = nullptr;
  try {  // tensors.storage_address: none for tensors without storage
    const at::Tensor& t = THPVariable_Unpack(v);
    if (t.has_storage()) address = t.storage().data();
  } catch (const std::exception&) {
    address = nullptr;
  }
  if (!address) return true;
  char name[48];
  std::snprintf(name, sizeof name, "inplace output %#llx",
                static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(address)));
  g_range_end(g_range_start(name, kUserPhase));
  return true;
}

bool fastPost(Stack& s, Entry& e, PyObject* args, PyObject* kwargs, PyObject* output) {
  for (const auto& [t, version] : e.versions) {
    if (t._version() != version) {
      if (!noteInplace(e, output)) return false;
      break;
    }
  }
  e.versions.clear();  // hold no tensor past the call
  bool has_kwargs = kwargs && PyDict_Check(kwargs) && PyDict_GET_SIZE(kwargs) > 0;
  static thread_local std::vector<const void*> seen;
  seen.clear();
  int64_t in_bytes = tensorBytes(args, seen);
  if (in_bytes < 0) return false;
  if (has_kwargs) {
    int64_t more = tensorBytes(kwargs, seen);
    if (more < 0) return false;
    in_bytes += more;
  }
  seen.clear();
  int64_t out_bytes = tensorBytes(output, seen);
  if (out_bytes < 0) return false;
  if (e.range_id) g_range_end_io(e.range_id, in_bytes, out_bytes);
  if (output == Py_None || !e.grad || !torch::autograd::GradMode::is_enabled()) return true;
  static thread_local std::vector<NodePtr> outputs, kw_inputs;
  static thread_local std::vector<Node*> out_raw, in_raw;
  outputs.clear();
  if (!gradNodes(output, outputs)) return false;
  if (outputs.empty()) return true;
  const std::vector<NodePtr>* inputs = &e.inputs;
  if (inputs->empty() && has_kwargs) {
    // Global pre-hooks do not see kwargs; read their nodes now (module_ranges.py).
    kw_inputs.clear();
    if (!gradNodes(kwargs, kw_inputs)) return false;
    std::vector<NodePtr> kept;
    for (auto& n : kw_inputs) {
      bool is_output = false;
      for (const auto& o : outputs) is_output = is_output || o == n;
      if (!is_output) kept.push_back(n);
    }
    kw_inputs.swap(kept);
    inputs = &kw_inputs;
  }
  out_raw.clear();
  in_raw.clear();
  for (const auto& n : outputs) out_raw.push_back(n.get());
  for (const auto& n : *inputs) in_raw.push_back(n.get());
  gcprof_hooks::armBackward(e.name->utf8, out_raw, in_raw, s.scopes == 0);
  outputs.clear();
  kw_inputs.clear();
  return true;
}

PyObject* py_forward_post(PyObject*, PyObject* const* argv, Py_ssize_t argc) {
  if (argc != 3 && argc != 4) {
    PyErr_SetString(PyExc_TypeError, "forward_post(module, args, [kwargs,] output)");
    return nullptr;
  }
  if (!g_shim) Py_RETURN_NONE;
  HookTimer timer(false);
  Stack& s = t_stack;
  if (s.depth == 0) Py_RETURN_NONE;  // the call began before the hooks were installed
  PyObject* args = argv[1];
  PyObject* kwargs = argc == 4 ? argv[2] : Py_None;
  PyObject* output = argv[argc - 1];
  Entry& e = s.entries[--s.depth];
  if (e.scope) s.scopes--;
  bool ok = true;
  try {
    if (e.kind == Kind::Native) {
      ok = fastPost(s, e, args, kwargs, output);
      e.clear();
    } else if (e.kind == Kind::Python) {
      PyObject* frame = e.frame;  // owned from here: python may call modules again
      e.frame = nullptr;
      e.clear();
      PyObject* r = PyObject_CallMethod(g_shim, "_native_post", "OOOOO", frame, args, kwargs,
                                        output, s.scopes > 0 ? Py_True : Py_False);
      Py_DECREF(frame);
      ok = r != nullptr;
      Py_XDECREF(r);
    }
  } catch (const std::exception& ex) {
    e.clear();
    PyErr_SetString(PyExc_RuntimeError, ex.what());
    ok = false;
  }
  if (!ok) return nullptr;
  Py_RETURN_NONE;
}

PyObject* py_forward_install(PyObject*, PyObject* args) {
  PyObject *shim, *tensor_bytes, *grad_nodes;
  if (!PyArg_ParseTuple(args, "OOO", &shim, &tensor_bytes, &grad_nodes)) return nullptr;
  if (!g_range_end_io || !g_range_start) {
    PyErr_SetString(PyExc_RuntimeError,
                    "no range_end_io entry point: install() the injector's first");
    return nullptr;
  }
  Py_INCREF(shim);
  Py_INCREF(tensor_bytes);
  Py_INCREF(grad_nodes);
  Py_XSETREF(g_shim, shim);
  Py_XSETREF(g_tensor_bytes, tensor_bytes);
  Py_XSETREF(g_grad_nodes, grad_nodes);
  Py_RETURN_NONE;
}

PyObject* py_forward_supported(PyObject*, PyObject*) {
  return PyBool_FromLong(g_range_end_io != nullptr && g_range_start != nullptr);
}

PyObject* py_forward_disable(PyObject*, PyObject*) {
  Py_CLEAR(g_shim);  // the hooks return at once from now on
  g_names.clear();
  // Calls in flight when it failed never reach the post-hook: let their tensors go.
  for (size_t i = 0; i < t_stack.depth; ++i) t_stack.entries[i].clear();
  t_stack.depth = t_stack.scopes = 0;
  Py_RETURN_NONE;
}

PyObject* py_set_names(PyObject*, PyObject* args) {
  PyObject* names;
  int recording = 1;
  if (!PyArg_ParseTuple(args, "Op", &names, &recording)) return nullptr;
  if (names == Py_None) {  // the names are those of the call before (module_tree.cpp)
    g_recording = recording != 0;
    Py_RETURN_NONE;
  }
  if (!PyDict_Check(names)) {
    PyErr_SetString(PyExc_TypeError, "set_names(names: dict or None, recording)");
    return nullptr;
  }
  std::unordered_map<PyObject*, NamePtr> fresh;
  fresh.reserve(static_cast<size_t>(PyDict_GET_SIZE(names)));
  Py_ssize_t pos = 0;
  PyObject *key, *value;
  // Names repeat root call after root call: keep the entry when unchanged.
  while (PyDict_Next(names, &pos, &key, &value)) {
    void* id = PyLong_AsVoidPtr(key);
    if (!id && PyErr_Occurred()) return nullptr;
    auto* module = static_cast<PyObject*>(id);
    auto old = g_names.find(module);
    if (old != g_names.end() && PyUnicode_Compare(old->second->py, value) == 0) {
      fresh.emplace(module, old->second);
      continue;
    }
    if (PyErr_Occurred()) return nullptr;
    Py_ssize_t len = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(value, &len);
    if (!utf8) return nullptr;
    fresh.emplace(module, std::make_shared<const Name>(std::string(utf8, len), value));
  }
  g_names.swap(fresh);
  g_recording = recording != 0;
  Py_RETURN_NONE;
}

PyObject* py_take_hook_cost(PyObject*, PyObject*) {
  uint64_t ns = g_hook_ns, calls = g_hook_calls;
  g_hook_ns = g_hook_calls = 0;
  if (!calls) Py_RETURN_NONE;
  return PyFloat_FromDouble(static_cast<double>(ns) / static_cast<double>(calls));
}

PyObject* py_forward_depth(PyObject*, PyObject*) {
  return PyLong_FromSize_t(t_stack.depth);
}

PyMethodDef kForwardMethods[] = {
    {"forward_pre", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_forward_pre)),
     METH_FASTCALL, "forward_pre(module, args): the global module forward pre-hook"},
    {"forward_post", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_forward_post)),
     METH_FASTCALL, "forward_post(module, args, [kwargs,] output): the global forward hook"},
    {"forward_install", py_forward_install, METH_VARARGS,
     "forward_install(module_ranges, tensor_bytes, grad_nodes): the python side's slow paths"},
    {"forward_supported", py_forward_supported, METH_NOARGS,
     "whether install() found an entry point ending a range with its io"},
    {"forward_disable", py_forward_disable, METH_NOARGS, "the forward hooks do nothing from now"},
    {"set_names", py_set_names, METH_VARARGS,
     "set_names({id(module): name} or None (unchanged), recording): after each root call"},
    {"take_hook_cost", py_take_hook_cost, METH_NOARGS,
     "mean ns inside the forward hooks per module call since the last call, or None"},
    {"forward_depth", py_forward_depth, METH_NOARGS, "this thread's module calls in flight"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

namespace gcprof_hooks {
bool addForwardHooks(PyObject* module) { return PyModule_AddFunctions(module, kForwardMethods) == 0; }
}  // namespace gcprof_hooks
