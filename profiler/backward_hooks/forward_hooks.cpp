// The python shim's per-module-call forward work in C++.
//
// module_ranges.py's hooks run on every module call of the process. On the
// python path one call costs ~75 python-level calls (tls, clock, grad mode,
// graph task id, a _Frame, tensor sizes, two ctypes calls, arm, ...). Here
// `forward_pre(module, args)` and `forward_post(module, args, kwargs,
// output)` do the common call in one C function each: the module's name comes
// from a table python fills once per root call (module_names.cpp), the
// arguments' tensors are walked as tensors.py walks them
// (argument_tensors.cpp), the range goes to the injector directly, and the
// backward range is armed without a python list or a grad_fn object.
//
// What is recorded is module_ranges.py's, event for event (the test
// python.shim.native_hooks compares both paths): the same range start, the
// same input/output bytes, the same in-place detection, the same arming.
// Everything else is left to python, which gets the call instead:
//   - a root call's own part (no module forward active on the thread): names
//     the tree, may open a step, the torch.compile marker (_native_root); the
//     call itself is then recorded here, unless in the operator mode;
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

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "argument_tensors.h"
#include "hooks.h"
#include "module_names.h"

namespace {

using gcprof_hooks::g_range_end;
using gcprof_hooks::g_range_end_io;
using gcprof_hooks::g_range_start;
using gcprof_hooks::Name;
using gcprof_hooks::NodePtr;
using gcprof_hooks::gradNodes;
using gcprof_hooks::tensorBytes;
using torch::autograd::Node;

constexpr int kUserPhase = 0;     // GCPROF_USER
constexpr int kForwardPhase = 1;  // GCPROF_FORWARD

PyObject* g_shim = nullptr;  // ModuleRanges: the slow paths
uint64_t g_hook_ns = 0;
uint64_t g_hook_calls = 0;

enum class Kind : uint8_t { Skip, Native, Python };

struct Entry {
  Kind kind = Kind::Skip;
  bool scope = false;  // a recorded forward call (a caller for arm's `root`)
  bool grad = false;   // grad mode was on: inputs were captured
  uint64_t range_id = 0;
  const Name* name = nullptr;
  std::vector<NodePtr> inputs;
  std::vector<std::pair<at::Tensor, int64_t>> versions;  // held only during the call
  PyObject* frame = nullptr;  // Kind::Python: python's _Frame (owned)

  void clear() {
    kind = Kind::Skip;
    scope = grad = false;
    range_id = 0;
    name = nullptr;
    inputs.clear();
    versions.clear();
    Py_CLEAR(frame);
  }
};

// A thread's calls in flight, and fastPost's scratch vectors.
struct Stack {
  // [0, depth) in use; the rest keep their capacity. A deque: an entry stays
  // where it is while deeper calls push.
  std::deque<Entry> entries;
  size_t depth = 0;
  size_t scopes = 0;  // entries in use with scope set
  std::vector<const void*> seen;
  std::vector<NodePtr> outputs, kw_inputs;
  std::vector<Node*> out_raw, in_raw;
  Entry& push() {
    if (depth == entries.size()) entries.emplace_back();
    return entries[depth++];
  }
};
// Each thread's Stack hangs on a pthread key, not a thread_local: in a
// library loaded with dlopen (every python extension) a thread_local read is
// a call into the loader (__tls_get_addr), which glibc before 2.39 sends down
// its slow path on every read once a later library with TLS was loaded (glibc
// bug 19924; torch's own reads pay it in a plain job too).
// pthread_getspecific reads the thread's own descriptor. Side by side on a
// short GPT step: x1.065-1.074 of plain with keys, x1.077-1.118 with
// thread_locals (bench/RESULTS.md).
pthread_key_t g_stack_key;

Stack& threadStack() {
  if (void* p = pthread_getspecific(g_stack_key)) return *static_cast<Stack*>(p);
  auto* s = new Stack();
  pthread_setspecific(g_stack_key, s);
  return *s;
}

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

// The common call: a known module, not root, not in backward, plain arguments.
// False (nothing pushed, no python error) when python must take it.
bool fastPre(Stack& s, PyObject* module, PyObject* args) {
  Entry& e = s.push();
  if (!gcprof_hooks::recordingModules()) return true;  // Skip
  const Name* name = gcprof_hooks::moduleName(module);
  if (!name) return true;  // Skip: outside every named tree
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
    int r = gcprof_hooks::argumentGradNodes(args, e.inputs);
    if (r != 0) {
      s.depth--;
      e.clear();
      if (r < 0) PyErr_Clear();  // python's walk will meet the same error and say so
      return false;
    }
  }
  e.kind = Kind::Native;
  e.scope = true;
  e.name = name;
  e.range_id = gcprof_hooks::rangeStartInterned(name->interned, kForwardPhase);
  s.scopes++;
  return true;
}

// Who records a root call once python has done its part (_native_root:
// names the tree, may open a step). Through python, the rest of a root call
// cost ~40 us a step (bench/RESULTS.md).
enum class RootCall { Here, Python, NotRecorded };

// False with a python error set.
bool rootPre(PyObject* module, long root, RootCall& who) {
  PyObject* r = PyObject_CallMethod(g_shim, "_native_root", "Ol", module, root);
  if (!r) return false;
  who = r == Py_None ? RootCall::NotRecorded : r == Py_False ? RootCall::Python : RootCall::Here;
  Py_DECREF(r);
  return true;
}

// Python's _native_pre(module, args, root) -> _Frame or None (not recorded);
// root is 2 for a root call made by module_call.cpp (no python frame of its
// own), 0 for any other call or a root call whose python part is done.
bool slowPre(Stack& s, PyObject* module, PyObject* args, long root) {
  PyObject* frame = PyObject_CallMethod(g_shim, "_native_pre", "OOl", module, args, root);
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

}  // namespace

namespace gcprof_hooks {
bool forwardPre(PyObject* module, PyObject* args, bool frameless) {
  if (!g_shim) return true;
  HookTimer timer(true);
  Stack& s = threadStack();
  try {
    long root = s.depth == 0 ? (frameless ? 2 : 1) : 0;
    bool done = false;
    if (torch::autograd::get_current_graph_task_id() == -1) {
      RootCall who = RootCall::Here;
      if (root && !rootPre(module, root, who)) return false;
      if (who == RootCall::NotRecorded) {
        s.push();  // Skip
        return true;
      }
      if (who == RootCall::Here) root = 0;  // named: recorded like any other call
      done = !root && fastPre(s, module, args);
    }
    if (!done && !slowPre(s, module, args, root)) return false;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return false;
  }
  return true;
}
}  // namespace gcprof_hooks

namespace {

PyObject* py_forward_pre(PyObject*, PyObject* const* argv, Py_ssize_t argc) {
  if (argc != 2 || !PyTuple_Check(argv[1])) {
    PyErr_SetString(PyExc_TypeError, "forward_pre(module, args: tuple)");
    return nullptr;
  }
  if (!gcprof_hooks::forwardPre(argv[0], argv[1], false)) return nullptr;
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
  std::vector<const void*>& seen = s.seen;
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
  std::vector<NodePtr>& outputs = s.outputs;
  std::vector<NodePtr>& kw_inputs = s.kw_inputs;
  std::vector<Node*>& out_raw = s.out_raw;
  std::vector<Node*>& in_raw = s.in_raw;
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
  gcprof_hooks::armBackward(e.name->interned, out_raw, in_raw, s.scopes == 0);
  outputs.clear();
  kw_inputs.clear();
  return true;
}

}  // namespace

namespace gcprof_hooks {
bool forwardPost(PyObject* args, PyObject* kwargs, PyObject* output) {
  if (!g_shim) return true;
  HookTimer timer(false);
  Stack& s = threadStack();
  if (s.depth == 0) return true;  // the call began before the hooks were installed
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
  return ok;
}
}  // namespace gcprof_hooks

namespace {

PyObject* py_forward_post(PyObject*, PyObject* const* argv, Py_ssize_t argc) {
  if (argc != 3 && argc != 4) {
    PyErr_SetString(PyExc_TypeError, "forward_post(module, args, [kwargs,] output)");
    return nullptr;
  }
  if (!gcprof_hooks::forwardPost(argv[1], argc == 4 ? argv[2] : Py_None, argv[argc - 1]))
    return nullptr;
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
  Py_XSETREF(g_shim, shim);
  gcprof_hooks::usePythonWalks(tensor_bytes, grad_nodes);
  Py_RETURN_NONE;
}

PyObject* py_forward_supported(PyObject*, PyObject*) {
  return PyBool_FromLong(g_range_end_io != nullptr && g_range_start != nullptr);
}

PyObject* py_forward_disable(PyObject*, PyObject*) {
  Py_CLEAR(g_shim);  // the hooks return at once from now on
  gcprof_hooks::forgetModuleNames();
  // Calls in flight when it failed never reach the post-hook: let their tensors go.
  Stack& s = threadStack();
  for (size_t i = 0; i < s.depth; ++i) s.entries[i].clear();
  s.depth = s.scopes = 0;
  Py_RETURN_NONE;
}

PyObject* py_take_hook_cost(PyObject*, PyObject*) {
  uint64_t ns = g_hook_ns, calls = g_hook_calls;
  g_hook_ns = g_hook_calls = 0;
  if (!calls) Py_RETURN_NONE;
  return PyFloat_FromDouble(static_cast<double>(ns) / static_cast<double>(calls));
}

PyObject* py_forward_depth(PyObject*, PyObject*) {
  return PyLong_FromSize_t(threadStack().depth);
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
    {"take_hook_cost", py_take_hook_cost, METH_NOARGS,
     "mean ns inside the forward hooks per module call since the last call, or None"},
    {"forward_depth", py_forward_depth, METH_NOARGS, "this thread's module calls in flight"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

namespace gcprof_hooks {
bool addForwardHooks(PyObject* module) {
  static bool keyed = pthread_key_create(&g_stack_key, [](void* s) {
                        delete static_cast<Stack*>(s);
                      }) == 0;
  if (!keyed) {
    PyErr_SetString(PyExc_RuntimeError, "gcprof_backward_hooks: no pthread key left");
    return false;
  }
  return PyModule_AddFunctions(module, kForwardMethods) == 0 && addNameFunctions(module);
}
}  // namespace gcprof_hooks
