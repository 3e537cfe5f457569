// Whether the model's module tree is the one named at its previous root call.
//
// module_ranges.py names the model's tree at every root call (the model's
// forward, once a step) by walking root.named_modules(): nothing tells it of
// every change to a tree (`ModuleList.insert`, `del seq[i]` and `_modules[k] =`
// write the dict directly), so a name kept from an earlier walk could be a
// stale one. In python that walk costs about 1 us per module (a generator per
// module, a string per name), paid on every step: on a short step that is
// about as much as everything else the shim does per module call.
//
// `same_tree(root)` walks the same tree here, as Module.named_modules does
// (depth first, `_modules` in order, None skipped), without building a name, and compares what it meets with
// the walk of the call before: the module at each place, its key, its depth.
// Equal walks give equal {id(module): name} maps, so python keeps the names
// it has (and the C++ table, set_names) and walks nothing itself. Anything
// this walk does not follow exactly (a class overriding named_modules or
// __hash__, a `_modules` that is not a plain dict, a module met twice) answers
// False, and python walks as before.
//
// Its memory is mapped pages, not malloc's: the injector records the job's
// host allocations of 1 KiB and more, and the shim's own bookkeeping must not
// move a host run's peaks (advise's figures were byte-identical before it).
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <new>
#include <string>
#include <unordered_set>
#include <vector>

#include "hooks.h"

namespace {

// Pages from mmap: unseen by the injector's malloc hooks.
template <typename T>
struct MappedAllocator {
  using value_type = T;
  MappedAllocator() = default;
  template <typename U>
  MappedAllocator(const MappedAllocator<U>&) {}
  T* allocate(size_t n) {
    void* p = mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) { munmap(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const MappedAllocator<U>&) const { return true; }
  template <typename U>
  bool operator!=(const MappedAllocator<U>&) const { return false; }
};
template <typename T>
using MappedVector = std::vector<T, MappedAllocator<T>>;

// Deeper than any model: a `_modules` cycle ends the walk (python walks).
constexpr int kMaxDepth = 256;

struct Place {
  PyObject* module;  // compared by address only: never dereferenced later
  int depth;
  std::string key;  // UTF-8; "" for the root
  bool operator==(const Place& o) const {
    return module == o.module && depth == o.depth && key == o.key;
  }
};

// The previous walk and this one (under the GIL). Both keep their capacity
// from call to call: vectors mapped and unmapped at every root call were
// half of the ~75 us the check took a step on a small GPT (munmap in a
// threaded job flushes the other CPUs' TLBs).
MappedVector<Place> g_last;
MappedVector<Place> g_now;
MappedVector<PyObject*> g_sorted;  // uniqueModules' scratch
PyObject* g_named_modules = nullptr;  // torch.nn.Module.named_modules
PyObject* g_modules_attr = nullptr;   // "_modules"
// Types whose named_modules and __hash__ are Module's (walked here exactly).
std::unordered_set<PyTypeObject*> g_plain_types;

// 1: walked like Module.named_modules; 0: a type this walk does not follow; -1: error.
int plainType(PyTypeObject* type) {
  if (g_plain_types.count(type)) return 1;
  if (type->tp_hash != PyBaseObject_Type.tp_hash) return 0;
  PyObject* fn = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "named_modules");
  if (!fn) return -1;
  bool same = fn == g_named_modules;
  Py_DECREF(fn);
  if (!same) return 0;
  Py_INCREF(type);  // kept in the set: a type freed and another made at its address
  g_plain_types.insert(type);
  return 1;
}

// Appends the places of `module`'s subtree; 1 when walked, 0 when python must walk, -1 on error.
// Every module is taken: one met twice is found afterwards (uniqueModules).
int walk(PyObject* module, int depth, const char* key, Py_ssize_t key_len,
         MappedVector<Place>& out) {
  if (depth > kMaxDepth) return 0;
  int plain = plainType(Py_TYPE(module));
  if (plain <= 0) return plain;
  out.push_back({module, depth, std::string(key, static_cast<size_t>(key_len))});
  PyObject* children = PyObject_GetAttr(module, g_modules_attr);
  if (!children) return -1;
  int r = 1;
  if (!PyDict_CheckExact(children)) {
    r = 0;
  } else {
    Py_ssize_t pos = 0;
    PyObject *name, *child;
    while (r == 1 && PyDict_Next(children, &pos, &name, &child)) {
      if (child == Py_None) continue;
      if (!PyUnicode_Check(name)) {
        r = 0;
        break;
      }
      Py_ssize_t len = 0;
      const char* utf8 = PyUnicode_AsUTF8AndSize(name, &len);
      if (!utf8) {
        r = -1;
        break;
      }
      Py_INCREF(child);  // the walk below runs python (a type's attribute lookup)
      r = walk(child, depth + 1, utf8, len, out);
      Py_DECREF(child);
    }
  }
  Py_DECREF(children);
  return r;
}

// Whether no module is met twice: named_modules names a shared module at its
// first place only, which this walk leaves to python (rare: weight tying
// shares parameters, not modules).
bool uniqueModules(const MappedVector<Place>& places) {
  MappedVector<PyObject*>& modules = g_sorted;
  modules.clear();
  for (const Place& p : places) modules.push_back(p.module);
  std::sort(modules.begin(), modules.end());
  return std::adjacent_find(modules.begin(), modules.end()) == modules.end();
}

PyObject* py_same_tree(PyObject*, PyObject* root) {
  if (!g_named_modules) {
    PyErr_SetString(PyExc_RuntimeError, "same_tree: tree_install(Module.named_modules) first");
    return nullptr;
  }
  // The walk may run python (a type's attribute lookup): a root call made
  // there would reuse the same buffers mid-walk, so it is left to python.
  static bool walking = false;
  if (walking) Py_RETURN_FALSE;
  MappedVector<Place>& now = g_now;
  now.clear();
  walking = true;
  int r = walk(root, 0, "", 0, now);
  walking = false;
  if (r < 0) return nullptr;
  if (r == 1 && !uniqueModules(now)) r = 0;
  bool same = r == 1 && now == g_last;
  if (r == 1)
    g_last.swap(now);
  else
    g_last.clear();  // python walks; the next call compares with nothing
  return PyBool_FromLong(same);
}

PyObject* py_tree_install(PyObject*, PyObject* named_modules) {
  Py_INCREF(named_modules);
  Py_XSETREF(g_named_modules, named_modules);
  if (!g_modules_attr) g_modules_attr = PyUnicode_InternFromString("_modules");
  g_last.clear();
  return g_modules_attr ? Py_NewRef(Py_None) : nullptr;
}

PyObject* py_tree_forget(PyObject*, PyObject*) {
  g_last.clear();
  Py_RETURN_NONE;
}

PyMethodDef kTreeMethods[] = {
    {"same_tree", py_same_tree, METH_O,
     "same_tree(root): whether root's module tree is the one walked at the previous call"},
    {"tree_install", py_tree_install, METH_O,
     "tree_install(torch.nn.Module.named_modules): the walk same_tree follows"},
    {"tree_forget", py_tree_forget, METH_NOARGS, "the next same_tree answers False"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

namespace gcprof_hooks {
bool addTreeFunctions(PyObject* module) { return PyModule_AddFunctions(module, kTreeMethods) == 0; }
}  // namespace gcprof_hooks
