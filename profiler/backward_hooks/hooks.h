// What backward_hooks.cpp (the backward ranges) and forward_hooks.cpp (the
// module forward hooks) of the gcprof_backward_hooks extension share: the
// injector's entry points and arming a module call's backward range.
#pragma once

#include <Python.h>

#include <torch/csrc/autograd/function.h>

#include <atomic>
#include <cstdint>
#include <vector>

namespace gcprof_hooks {

using RangeStartFn = uint64_t (*)(const char*, int);
using RangeEndFn = void (*)(uint64_t);
using RangeEndIoFn = void (*)(uint64_t, int64_t, int64_t);
using InternFn = const char* (*)(const char*);
extern RangeStartFn g_range_start;
extern RangeEndFn g_range_end;
extern RangeEndIoFn g_range_end_io;  // null: the forward hooks stay in python
extern std::atomic<bool> g_enabled;  // false once the shim's failsafe ran
// The injector's gcprof_inject_intern / _range_start_interned; null without it.
extern InternFn g_intern;
extern RangeStartFn g_range_start_interned;

// A module's name as the injector keeps it (a stable pointer, the same for
// equal names), taken once when the name is first seen; a range started with
// it costs no hash of the name (two a module call). Without the injector
// (tests' recorders): kept by module_names.cpp, started through g_range_start.
const char* internName(const char* name);
inline uint64_t rangeStartInterned(const char* interned, int phase) {
  return g_range_start_interned ? g_range_start_interned(interned, phase)
                                : g_range_start(interned, phase);
}

// The node behind a grad_fn object; null for anything else.
torch::autograd::Node* nodeOf(PyObject* obj);

// A module call's backward range (backward_hooks.cpp's arm); `root`: the call
// had no recorded caller, so the next root call gets its own dispatchers.
void armBackward(const char* interned_name, const std::vector<torch::autograd::Node*>& outputs,
                 const std::vector<torch::autograd::Node*>& inputs, bool root);

// The module forward hooks (forward_hooks.cpp) as module_call.cpp calls them:
// false with a python error set. `frameless`: called by module_call.cpp's
// Module.__call__, which leaves no python frame (module_ranges.py's attach check).
bool forwardPre(PyObject* module, PyObject* args, bool frameless);
bool forwardPost(PyObject* args, PyObject* kwargs, PyObject* output);

// Adds forward_hooks.cpp's functions to the module; false with a python error set.
bool addForwardHooks(PyObject* module);

// Adds module_tree.cpp's functions (same_tree) likewise.
bool addTreeFunctions(PyObject* module);

// Adds module_call.cpp's function (module_call) likewise.
bool addModuleCall(PyObject* module);

}  // namespace gcprof_hooks
