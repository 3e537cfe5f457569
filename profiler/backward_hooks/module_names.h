// The qualified names of the modules the forward hooks record: python's
// module_ranges.py names a root call's tree and hands the table over
// (set_names) at each root call; the forward hooks (forward_hooks.cpp) look
// modules up in it. Read and written under the GIL.
#pragma once

#include <Python.h>

namespace gcprof_hooks {

// A module's qualified name. One per distinct name, never freed (a name's
// calls may outlive the table that named them: another thread's root call
// replaces it, a backward pass runs later), so the hooks hold plain pointers.
struct Name {
  const char* interned;  // UTF-8, as the injector keeps it (hooks.h's internName)
  PyObject* py;          // the str, for python (owned)
  mutable bool inplace_noted = false;  // python's _note_inplace has seen this name
};

// The name of `module` in the trees named so far; null outside them.
const Name* moduleName(PyObject* module);
// Python's _recording, refreshed at each root call.
bool recordingModules();
void forgetModuleNames();

// Adds set_names to the extension; false with a python error set.
bool addNameFunctions(PyObject* module);

}  // namespace gcprof_hooks
