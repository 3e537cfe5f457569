// The module name table (module_names.h).
#define PY_SSIZE_T_CLEAN
#include "module_names.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "hooks.h"

namespace gcprof_hooks {
namespace {

// module object -> name, in an open-addressing table (python's _names dict,
// keyed by id(module) the same way), replaced by set_names when a root call's
// tree changed. A module call's lookup reads one or two cache lines; an
// unordered_map's bucket and node cost ~0.3 us a call with the step's work
// evicting them (bench/RESULTS.md).
struct Slot {
  PyObject* module = nullptr;  // null: empty
  const Name* name = nullptr;
};
std::vector<Slot> g_slots;  // a power of two in size, at most half full
bool g_recording = true;

size_t slotOf(PyObject* module, size_t mask) {
  // Objects are 16-byte aligned: drop the always-zero bits.
  uint64_t h = (reinterpret_cast<uintptr_t>(module) >> 4) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h >> 32) & mask;
}

void put(std::vector<Slot>& slots, PyObject* module, const Name* name) {
  size_t mask = slots.size() - 1;
  size_t i = slotOf(module, mask);
  while (slots[i].module && slots[i].module != module) i = (i + 1) & mask;
  slots[i] = {module, name};
}

// Every distinct name once, by its text (a map's entries stay where they
// are); never destroyed (see Name). The text, not the interned pointer: an
// injector out of name space interns every new name as one "<names full>".
std::unordered_map<std::string, Name>& allNames() {
  static auto* names = new std::unordered_map<std::string, Name>();
  return *names;
}

const Name* nameFor(const char* utf8, PyObject* py) {
  auto [it, added] = allNames().try_emplace(utf8, Name{nullptr, py});
  if (added) {
    Py_INCREF(py);
    it->second.interned = internName(utf8);
  }
  return &it->second;
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
  size_t size = 16;
  while (size < 2 * static_cast<size_t>(PyDict_GET_SIZE(names))) size *= 2;
  std::vector<Slot> fresh(size);
  Py_ssize_t pos = 0;
  PyObject *key, *value;
  while (PyDict_Next(names, &pos, &key, &value)) {
    void* id = PyLong_AsVoidPtr(key);
    if (!id && PyErr_Occurred()) return nullptr;
    auto* module = static_cast<PyObject*>(id);
    // Names repeat root call after root call: no need to intern them again.
    const Name* old = moduleName(module);
    if (old && PyUnicode_Compare(old->py, value) == 0) {
      put(fresh, module, old);
      continue;
    }
    if (PyErr_Occurred()) return nullptr;
    const char* utf8 = PyUnicode_AsUTF8(value);
    if (!utf8) return nullptr;
    put(fresh, module, nameFor(utf8, value));
  }
  g_slots.swap(fresh);
  g_recording = recording != 0;
  Py_RETURN_NONE;
}

PyMethodDef kNameMethods[] = {
    {"set_names", py_set_names, METH_VARARGS,
     "set_names({id(module): name} or None (unchanged), recording): after each root call"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

const char* internName(const char* name) {
  if (g_intern) return g_intern(name);
  // Under the GIL (set_names, arm); never destroyed: see Name.
  static auto* kept = new std::unordered_set<std::string>();
  return kept->emplace(name).first->c_str();
}

const Name* moduleName(PyObject* module) {
  if (g_slots.empty()) return nullptr;
  size_t mask = g_slots.size() - 1;
  for (size_t i = slotOf(module, mask); g_slots[i].module; i = (i + 1) & mask)
    if (g_slots[i].module == module) return g_slots[i].name;
  return nullptr;
}

bool recordingModules() { return g_recording; }

void forgetModuleNames() {
  std::vector<Slot>().swap(g_slots);
  // The next recording (attached again) has a fresh python side that has
  // reported no module as in place yet.
  for (auto& [text, name] : allNames()) name.inplace_noted = false;
}

bool addNameFunctions(PyObject* module) { return PyModule_AddFunctions(module, kNameMethods) == 0; }

}  // namespace gcprof_hooks
