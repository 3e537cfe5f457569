// The qualified names of the modules the forward hooks record: python's
// module_ranges.py names a root call's tree and hands the table over
// (set_names) at each root call; the forward hooks (forward_hooks.cpp) look
// modules up in it. Read and written under the GIL.
#pragma once

#include <Python.h>

#include <memory>
#include <string>

namespace gcprof_hooks {

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

// The name of `module` in the trees named so far; null outside them.
const NamePtr* moduleName(PyObject* module);
// Python's _recording, refreshed at each root call.
bool recordingModules();
void forgetModuleNames();

// Adds set_names to the extension; false with a python error set.
bool addNameFunctions(PyObject* module);

}  // namespace gcprof_hooks
