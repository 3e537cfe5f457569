// The module name table (module_names.h).
#define PY_SSIZE_T_CLEAN
#include "module_names.h"

#include <Python.h>

#include <unordered_map>

namespace gcprof_hooks {
namespace {

// module object -> name; replaced by set_names at each root call (python's
// _names dict, keyed by id(module) the same way).
std::unordered_map<PyObject*, NamePtr> g_names;
bool g_recording = true;

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

PyMethodDef kNameMethods[] = {
    {"set_names", py_set_names, METH_VARARGS,
     "set_names({id(module): name} or None (unchanged), recording): after each root call"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

const NamePtr* moduleName(PyObject* module) {
  auto it = g_names.find(module);
  return it == g_names.end() ? nullptr : &it->second;
}

bool recordingModules() { return g_recording; }

void forgetModuleNames() { g_names.clear(); }

bool addNameFunctions(PyObject* module) { return PyModule_AddFunctions(module, kNameMethods) == 0; }

}  // namespace gcprof_hooks
