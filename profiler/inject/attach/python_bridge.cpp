#include "attach/python_bridge.h"

#include <dlfcn.h>

#include <cstdio>

#include "hook_guard.h"

namespace gcprof::inject::attach {
namespace {

constexpr int kPyEvalInput = 258;  // Py_eval_input (Include/compile.h, stable since 2.x)

struct Python {
  int (*is_initialized)();
  int (*gil_ensure)();
  void (*gil_release)(int);
  void* (*dict_new)();
  void* (*run_string)(const char*, int, void*, void*, void*);
  long (*as_long)(void*);
  void (*decref)(void*);
  void (*print_error)();
  bool found = false;
};

template <typename F>
bool find(F& slot, const char* name) {
  slot = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  return slot != nullptr;
}

const Python& python() {
  static Python py = [] {
    Python p{};
    p.found = find(p.is_initialized, "Py_IsInitialized") &&
              find(p.gil_ensure, "PyGILState_Ensure") &&
              find(p.gil_release, "PyGILState_Release") && find(p.dict_new, "PyDict_New") &&
              find(p.run_string, "PyRun_StringFlags") && find(p.as_long, "PyLong_AsLong") &&
              find(p.decref, "Py_DecRef") && find(p.print_error, "PyErr_Print");
    return p;
  }();
  return py;
}

}  // namespace

bool pythonPresent() { return python().found && python().is_initialized(); }

long evalPython(const std::string& expression, long failed) {
  const Python& py = python();
  if (!pythonPresent()) return failed;
  int gil = py.gil_ensure();
  long result = failed;
  // Python run here may drop the last reference to a job's tensor; its
  // free is the job's (hook_guard.h).
  t_frees_are_the_jobs = true;
  // A fresh globals dict: nothing is bound in the job's own namespaces.
  if (void* globals = py.dict_new()) {
    if (void* value = py.run_string(expression.c_str(), kPyEvalInput, globals, globals, nullptr)) {
      result = py.as_long(value);
      py.decref(value);
    } else {
      py.print_error();
    }
    py.decref(globals);
  }
  t_frees_are_the_jobs = false;
  py.gil_release(gil);
  return result;
}

std::string pythonLiteral(const std::string& text) {
  std::string out = "'";
  for (unsigned char c : text) {
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {  // UTF-8 passes as is: the source text is UTF-8
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "'";
}

}  // namespace gcprof::inject::attach
