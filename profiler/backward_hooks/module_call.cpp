// module_call.py's Module.__call__ in C: the module forward hooks
// (forward_hooks.cpp) around forward, without a python frame.
//
// module_call.py's python __call__ costs a frame, its is_compiling() call
// (two more python calls) and the attribute tests per module call; on
// short steps that is a large part of what recording costs per call
// (bench/RESULTS.md). This object does the same in one C call:
//   - the same tests, read without python calls: torch.compiler's
//     _is_compiling_flag (is_compiling() without torch.jit.is_scripting(),
//     which is False wherever python runs), the JIT tracer's state, the
//     module's own hook dicts and _compiled_call_impl in its __dict__, the
//     global hook dicts' sizes;
//   - anything not plainly the common case (a flag set, a hook, a key not in
//     the instance __dict__, removed) calls the python __call__ instead, which
//     decides with its own rules: torch's dispatch, or the direct call;
//   - otherwise: forwardPre, forward, forwardPost, with the python version's
//     error handling (an Exception inside a hook goes to failsafe's
//     internal_error and never reaches the job; the post-hook also runs when
//     forward raised, as torch runs an always_call hook).
//
// What python sees is the python __call__: the descriptor gives it (bound to
// the instance, or itself on the class), so introspection, super().__call__
// and the checks `Module.__call__ is ...` find module_call.py's function as
// before; while torch.compile compiles, it gives torch's own. Only
// CPython's call slots (a module called as `m(x)` or `m.__call__(x)`) reach
// the C path: the type is a method descriptor (Py_TPFLAGS_METHOD_DESCRIPTOR),
// so the interpreter calls it with the module as first argument.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <torch/csrc/jit/frontend/tracer.h>

#include <cstddef>

#include "hooks.h"

namespace {

struct ModuleCall {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* python_call;  // module_call.py's __call__: the fallback, and what python sees
  PyObject* torch_call;   // torch's own Module.__call__: what Dynamo sees while compiling
  PyObject* on;           // module_call.py's list: empty once removed
  PyObject* error;        // failsafe.internal_error(where, exc)
  PyObject* compiler;     // torch.compiler's globals (its _is_compiling_flag)
  PyObject* hooks[4];     // torch's global forward pre, forward, backward pre, backward hooks
};

PyObject* g_compiling_flag = nullptr;  // interned names
PyObject* g_forward = nullptr;
PyObject* g_compiled = nullptr;
PyObject* g_module_hooks[4] = {};  // the module's own hook dicts

bool emptyDict(PyObject* v) {
  return PyDict_Check(v) ? PyDict_GET_SIZE(v) == 0 : false;
}

// module.<name> when python's attribute lookup would find a plain value (the
// instance __dict__, else a class attribute that is no descriptor: torch's
// _compiled_call_impl = None); null otherwise (python's rules decide).
PyObject* plainAttribute(PyObject* module, PyObject* dict, PyObject* name) {
  PyObject* in_class = _PyType_Lookup(Py_TYPE(module), name);
  if (in_class && Py_TYPE(in_class)->tp_descr_set) return nullptr;  // a data descriptor wins
  PyObject* value = PyDict_GetItemWithError(dict, name);
  if (value || PyErr_Occurred()) return value;
  return in_class && !Py_TYPE(in_class)->tp_descr_get ? in_class : nullptr;
}

// True when the common case holds: gcprof's two hooks alone, nothing traced
// or compiled. False sends the call to the python __call__.
bool plainCall(ModuleCall* self, PyObject* module) {
  PyObject* flag = PyDict_GetItemWithError(self->compiler, g_compiling_flag);
  if (flag != Py_False || PyList_GET_SIZE(self->on) == 0) return false;
  if (PyDict_GET_SIZE(self->hooks[0]) != 1 || PyDict_GET_SIZE(self->hooks[1]) != 1 ||
      PyDict_GET_SIZE(self->hooks[2]) != 0 || PyDict_GET_SIZE(self->hooks[3]) != 0)
    return false;
  if (torch::jit::tracer::isTracing()) return false;
  PyObject* dict = PyObject_GenericGetDict(module, nullptr);
  if (!dict) {
    PyErr_Clear();  // no __dict__: python's rules decide
    return false;
  }
  bool plain = plainAttribute(module, dict, g_compiled) == Py_None;
  for (PyObject* name : g_module_hooks) {
    PyObject* hooks = plain ? plainAttribute(module, dict, name) : nullptr;
    plain = hooks && emptyDict(hooks);
  }
  Py_DECREF(dict);
  return plain;
}

// A hook's error: an Exception goes to failsafe (recording ends, the job goes
// on); anything else (KeyboardInterrupt) propagates. False: propagate.
bool hookFailed(ModuleCall* self, const char* where) {
  if (!PyErr_ExceptionMatches(PyExc_Exception)) return false;
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb) PyException_SetTraceback(value, tb);
  PyObject* r = PyObject_CallFunction(self->error, "sO", where, value);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  Py_XDECREF(r);
  return r != nullptr;
}

PyObject* callForward(PyObject* forward, PyObject* module, PyObject* const* args, size_t nargs,
                      PyObject* kwnames) {
  // A bound method of this module: its function with the arguments as they
  // came (the module first), no copy.
  if (PyMethod_Check(forward) && PyMethod_GET_SELF(forward) == module)
    return PyObject_Vectorcall(PyMethod_GET_FUNCTION(forward), args, nargs, kwnames);
  return PyObject_Vectorcall(forward, args + 1, nargs - 1, kwnames);
}

PyObject* directCall(ModuleCall* self, PyObject* module, PyObject* const* args, size_t nargs,
                     PyObject* kwnames) {
  PyObject* forward = PyObject_GetAttr(module, g_forward);
  if (!forward) return nullptr;
  PyObject* positional = PyTuple_New(static_cast<Py_ssize_t>(nargs - 1));
  if (!positional) {
    Py_DECREF(forward);
    return nullptr;
  }
  for (size_t i = 1; i < nargs; ++i) {
    Py_INCREF(args[i]);
    PyTuple_SET_ITEM(positional, static_cast<Py_ssize_t>(i - 1), args[i]);
  }
  PyObject* kwargs = Py_None;  // the hooks read no kwargs when there are none
  Py_INCREF(kwargs);
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  if (nkw) {
    Py_SETREF(kwargs, PyDict_New());
    for (Py_ssize_t i = 0; kwargs && i < nkw; ++i)
      if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0)
        Py_CLEAR(kwargs);
  }
  PyObject* result = nullptr;
  if (kwargs && (gcprof_hooks::forwardPre(module, positional, true) ||
                 hookFailed(self, "the module forward pre-hook"))) {
    result = callForward(forward, module, args, nargs, kwnames);
    if (!result && PyErr_ExceptionMatches(PyExc_Exception)) {  // as torch's `except Exception`
      PyObject *type, *value, *tb;
      PyErr_Fetch(&type, &value, &tb);
      bool ok = gcprof_hooks::forwardPost(positional, Py_None, Py_None) ||
                hookFailed(self, "the module forward hook");
      if (ok) {
        PyErr_Restore(type, value, tb);
      } else {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
      }
    } else if (result && !gcprof_hooks::forwardPost(positional, kwargs, result) &&
               !hookFailed(self, "the module forward hook")) {
      Py_CLEAR(result);
    }
  }
  Py_DECREF(forward);
  Py_DECREF(positional);
  Py_XDECREF(kwargs);
  return result;
}

PyObject* moduleCallVectorcall(PyObject* callable, PyObject* const* args, size_t nargsf,
                               PyObject* kwnames) {
  auto* self = reinterpret_cast<ModuleCall*>(callable);
  size_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs == 0 || !plainCall(self, args[0])) {
    if (PyErr_Occurred()) return nullptr;
    return PyObject_Vectorcall(self->python_call, args, nargsf, kwnames);
  }
  return directCall(self, args[0], args, nargs, kwnames);
}

// What python sees: the python __call__, bound to the instance or not; while
// torch.compile compiles, torch's own. Dynamo inlines the function it gets
// here but guards on the object in the class's __dict__ (this one): a closure
// it read from the python __call__ could not be guarded there, and torch's
// own function, which the python __call__ calls when compiling, has none.
PyObject* moduleCallGet(PyObject* callable, PyObject* obj, PyObject*) {
  auto* self = reinterpret_cast<ModuleCall*>(callable);
  PyObject* flag = PyDict_GetItemWithError(self->compiler, g_compiling_flag);
  if (!flag && PyErr_Occurred()) return nullptr;
  PyObject* seen = flag == Py_True ? self->torch_call : self->python_call;
  if (obj == nullptr || obj == Py_None) {
    Py_INCREF(seen);
    return seen;
  }
  return PyMethod_New(seen, obj);
}

void moduleCallDealloc(PyObject* callable) {
  auto* self = reinterpret_cast<ModuleCall*>(callable);
  Py_XDECREF(self->python_call);
  Py_XDECREF(self->torch_call);
  Py_XDECREF(self->on);
  Py_XDECREF(self->error);
  Py_XDECREF(self->compiler);
  for (PyObject* d : self->hooks) Py_XDECREF(d);
  Py_TYPE(callable)->tp_free(callable);
}

// A static type (its fields set in addModuleCall): CPython's header macro
// leaves the rest of the struct to zero-initialisation.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
PyTypeObject g_type = {PyVarObject_HEAD_INIT(nullptr, 0)};
#pragma GCC diagnostic pop

// module_call(python_call, on, error, compiler_globals, (pre, post, backward_pre, backward),
//             torch_call)
PyObject* py_module_call(PyObject*, PyObject* args) {
  PyObject *python_call, *on, *error, *compiler, *hooks, *torch_call;
  if (!PyArg_ParseTuple(args, "OO!OO!O!O", &python_call, &PyList_Type, &on, &error, &PyDict_Type,
                        &compiler, &PyTuple_Type, &hooks, &torch_call))
    return nullptr;
  if (PyTuple_GET_SIZE(hooks) != 4) {
    PyErr_SetString(PyExc_TypeError, "module_call: four global hook dicts expected");
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < 4; ++i)
    if (!PyDict_Check(PyTuple_GET_ITEM(hooks, i))) {
      PyErr_SetString(PyExc_TypeError, "module_call: the global hooks must be dicts");
      return nullptr;
    }
  auto* self = PyObject_New(ModuleCall, &g_type);
  if (!self) return nullptr;
  self->vectorcall = moduleCallVectorcall;
  PyObject* held[] = {python_call, torch_call, on, error, compiler};
  for (PyObject* o : held) Py_INCREF(o);
  self->python_call = python_call;
  self->torch_call = torch_call;
  self->on = on;
  self->error = error;
  self->compiler = compiler;
  for (Py_ssize_t i = 0; i < 4; ++i) {
    self->hooks[i] = PyTuple_GET_ITEM(hooks, i);
    Py_INCREF(self->hooks[i]);
  }
  return reinterpret_cast<PyObject*>(self);
}

PyMethodDef kMethods[] = {
    {"module_call", py_module_call, METH_VARARGS,
     "module_call(python_call, on, internal_error, torch.compiler globals, (global forward "
     "pre, forward, backward pre, backward hook dicts), torch_call): module_call.py's "
     "__call__ in C"},
    {nullptr, nullptr, 0, nullptr}};

bool intern(PyObject*& slot, const char* name) {
  if (!slot) slot = PyUnicode_InternFromString(name);
  return slot != nullptr;
}

}  // namespace

namespace gcprof_hooks {
bool addModuleCall(PyObject* module) {
  const char* hook_names[] = {"_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks",
                              "_backward_hooks"};
  for (int i = 0; i < 4; ++i)
    if (!intern(g_module_hooks[i], hook_names[i])) return false;
  if (!intern(g_compiling_flag, "_is_compiling_flag") || !intern(g_forward, "forward") ||
      !intern(g_compiled, "_compiled_call_impl"))
    return false;
  g_type.tp_name = "gcprof_backward_hooks.ModuleCall";
  g_type.tp_basicsize = sizeof(ModuleCall);
  g_type.tp_dealloc = moduleCallDealloc;
  g_type.tp_vectorcall_offset = offsetof(ModuleCall, vectorcall);
  g_type.tp_call = PyVectorcall_Call;
  g_type.tp_descr_get = moduleCallGet;
  g_type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR;
  g_type.tp_doc = "module_call.py's Module.__call__ in C (module_call.cpp)";
  if (PyType_Ready(&g_type) < 0) return false;
  return PyModule_AddFunctions(module, kMethods) == 0;
}
}  // namespace gcprof_hooks
