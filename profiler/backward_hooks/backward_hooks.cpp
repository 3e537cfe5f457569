// gcprof_backward_hooks: the python shim's backward ranges in C++.
//
// The python path (profiler/python/gcprof/backward_ranges.py) puts a python
// pre-hook on every autograd node that starts or ends a module's backward:
// torch builds a RemovableHandle per node and the engine takes the GIL to
// call into python for each of them. This module does the same work with
// C++ hooks added to the nodes directly: no python object per node, no GIL
// in the backward pass. After each module call the forward side hands
// `arm` the nodes of the call's outputs and of its inputs (captured before
// the forward ran): forward_hooks.cpp directly (armBackward), or python's
// forward hooks through py_arm with grad_fn objects.
//
// The range semantics are backward_ranges.py's docstring, unchanged:
//   start  the first pre-hook of an output node to fire opens the range;
//   end    the range closes when every input node's pre-hook fired;
//          inputs without grad_fn: post-hooks on the module's own small
//          subgraph (<= kOwnGraphLimit nodes), else the end of the pass;
//   safety every range a backward pass opened and left open closes when
//          the pass ends (Engine::queue_callback);
//   order  one dispatcher per node: ends (innermost first), then starts
//          (outermost first), so ranges meeting at a node nest.
// A node's dispatcher is found on the node itself (its pre-hook list). The
// python path finds it through per-call dicts that a root call drops when it
// returns, so a node met again by a later root call (the model's output fed
// to a loss module) gets a second dispatcher after the first: each
// dispatcher remembers the root call that made it (a per-thread token) and
// only that root call's modules reuse it.
//
// Hooks hold a BackwardRange (a name, an id, a counter), never a tensor or a
// node, and live on nodes the graph owns: a graph freed without backward
// frees them too.
//
// Ranges go to the injector's exported C functions
// (profiler/include/gcprof/gcprof.h), resolved with dlsym when installed, so
// nothing is recorded unless the injector is preloaded; tests may hand in
// other function addresses instead (the python shim's fake recorder).
//
// Built against one torch (ABI): the shim loads it only when the job's torch
// and python are the ones it was built for (native_hooks.py), otherwise it
// keeps the python path.
//
// One file over 400 lines: the node hooks, each pass's list of open ranges
// and the python entry points share one mutex and one range state machine;
// split apart, each part would reach into the others' state.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <pthread.h>

#include <c10/util/SmallVector.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/autograd/graph_task.h>
#include <torch/csrc/autograd/python_cpp_function.h>
#include <torch/csrc/autograd/python_function.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "hooks.h"
#include "torch_nodes.h"

namespace gcprof_hooks {
RangeStartFn g_range_start = nullptr;
RangeEndFn g_range_end = nullptr;
RangeEndIoFn g_range_end_io = nullptr;
InternFn g_intern = nullptr;
RangeStartFn g_range_start_interned = nullptr;
std::atomic<bool> g_enabled{false};
}  // namespace gcprof_hooks

using namespace gcprof_hooks;

namespace {

using torch::autograd::Node;
using torch::autograd::variable_list;

constexpr int kBackwardPhase = 2;    // GCPROF_BACKWARD
constexpr size_t kOwnGraphLimit = 8;  // backward_ranges.py's _OWN_GRAPH_LIMIT

// Every state change below happens under this lock: the forward thread arms
// while backward passes (CPU: the caller's thread, CUDA: autograd's device
// threads) fire hooks. It is never held while calling into the engine.
std::mutex g_mutex;

enum class State { Waiting, Open, Closed };

struct BackwardRange {
  BackwardRange(const char* n, size_t p, bool e) : name(n), pending(p), empty(e) {}
  const char* name;  // interned (hooks.h): outlives the range
  uint64_t range_id = 0;
  State state = State::Waiting;
  size_t pending;  // end nodes still to fire
  int task = 0;
  bool empty;  // outputs are inputs (Identity, p=0 Dropout): ends at its start
  // While open: a link in its graph task's list, and itself, kept alive
  // until its pass ends (the hooks that hold it may be freed first).
  BackwardRange* prev = nullptr;
  BackwardRange* next = nullptr;
  std::shared_ptr<BackwardRange> self;
};
using RangePtr = std::shared_ptr<BackwardRange>;

// The ranges a graph task opened that are still open, in an intrusive list:
// opening and closing one allocates nothing and hashes nothing (every module
// call's backward range does both). One entry per backward pass running,
// from its first range until its end-of-pass callback.
struct OpenRanges {
  int task;
  BackwardRange* head;
};
std::vector<OpenRanges> g_open;
size_t g_open_count = 0;

OpenRanges* openRangesOf(int task) {
  for (OpenRanges& o : g_open)
    if (o.task == task) return &o;
  return nullptr;
}

void closeRange(BackwardRange& br) {
  br.state = State::Closed;
  if (br.range_id) g_range_end(br.range_id);
}

// Unlinks an open range; may free it (its `self` may be the last owner).
void forgetOpen(BackwardRange& br) {
  if (!br.self) return;
  if (br.next) br.next->prev = br.prev;
  if (br.prev) {
    br.prev->next = br.next;
  } else if (OpenRanges* o = openRangesOf(br.task)) {
    o->head = br.next;
  }
  br.prev = br.next = nullptr;
  --g_open_count;
  RangePtr last = std::move(br.self);
}

void countDown(BackwardRange& br) {
  if (br.pending > 0) br.pending--;
  if (br.pending > 0) return;
  if (br.state == State::Open) {
    closeRange(br);
    forgetOpen(br);
  } else if (br.state == State::Waiting) {  // its outputs' backward never ran: nothing to record
    br.state = State::Closed;
  }
}

void backwardDone(int task) {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  OpenRanges* o = openRangesOf(task);
  if (!o) return;
  BackwardRange* br = o->head;
  *o = g_open.back();
  g_open.pop_back();
  while (br) {
    BackwardRange* next = br->next;
    if (br->state == State::Open) closeRange(*br);
    br->prev = br->next = nullptr;
    --g_open_count;
    RangePtr last = std::move(br->self);  // may free it
    br = next;
  }
}

// Opens `br`; true when its graph task needs the end-of-pass callback queued.
bool startRange(const RangePtr& br) {
  if (br->state != State::Waiting) return false;
  br->state = State::Open;
  br->range_id = rangeStartInterned(br->name, kBackwardPhase);
  if (br->empty) {
    closeRange(*br);
    return false;
  }
  br->task = torch::autograd::get_current_graph_task_id();
  OpenRanges* o = openRangesOf(br->task);
  bool first = o == nullptr;
  if (first) {
    g_open.push_back({br->task, nullptr});
    o = &g_open.back();
  }
  br->next = o->head;
  if (br->next) br->next->prev = br.get();
  o->head = br.get();
  br->self = br;
  ++g_open_count;
  return first;
}

void internalError(const char* where) {
  // The python path would tear every hook down; here the backward hooks stop
  // (the forward ranges go on) and say so once.
  if (g_enabled.exchange(false))
    std::fprintf(stderr,
                 "gcprof: internal error in %s; backward ranges are no longer recorded, "
                 "the job continues\n",
                 where);
}

// One per node: what its pre-hook does when the gradient w.r.t. its outputs is complete.
// A node starts and ends the ranges of a few nested modules at most: the
// lists live in the dispatcher (two heap blocks fewer per module call).
struct Dispatcher final : torch::autograd::FunctionPreHook {
  explicit Dispatcher(uint64_t t) : token(t) {}
  uint64_t token;                        // the root call whose modules share this dispatcher
  c10::SmallVector<RangePtr, 2> ends;    // innermost first
  c10::SmallVector<RangePtr, 2> starts;  // outermost first

  variable_list operator()(const variable_list& grads) override {
    if (!g_enabled.load(std::memory_order_relaxed)) return grads;
    try {
      std::vector<int> queue;
      {
        std::lock_guard<std::mutex> lock(g_mutex);
        for (const RangePtr& br : ends) countDown(*br);
        for (const RangePtr& br : starts)
          if (startRange(br)) queue.push_back(br->task);
      }
      for (int task : queue)
        torch::autograd::Engine::get_default_engine().queue_callback(
            [task] { backwardDone(task); });
    } catch (...) {
      internalError("a native backward node hook");
    }
    return grads;
  }
  // Compiled autograd traces hooks through this; ours are left out of a
  // compiled backward (its ranges are not recorded) instead of failing it.
  void compiled_args(torch::dynamo::autograd::CompiledNodeArgs&) const override {}
};

// Post-hook on a node of a module's own subgraph (inputs without grad_fn).
struct NodeRan final : torch::autograd::FunctionPostHook {
  explicit NodeRan(RangePtr r) : br(std::move(r)) {}
  RangePtr br;
  variable_list operator()(const variable_list& outputs, const variable_list&) override {
    if (!g_enabled.load(std::memory_order_relaxed)) return outputs;
    try {
      std::lock_guard<std::mutex> lock(g_mutex);
      countDown(*br);
    } catch (...) {
      internalError("a native backward node post-hook");
    }
    return outputs;
  }
  void compiled_args(torch::dynamo::autograd::CompiledNodeArgs&) const override {}
};

// The thread's token, on a pthread key rather than a thread_local (a read
// per module call; why: forward_hooks.cpp's threadStack).
std::atomic<uint64_t> g_next_token{1};
pthread_key_t g_token_key;

uint64_t nextToken() {
  uint64_t token = g_next_token.fetch_add(1);
  pthread_setspecific(g_token_key, reinterpret_cast<void*>(static_cast<uintptr_t>(token)));
  return token;
}

uint64_t currentToken() {
  auto token = reinterpret_cast<uintptr_t>(pthread_getspecific(g_token_key));
  return token ? token : nextToken();
}

Dispatcher& dispatcherOf(Node& node, uint64_t token) {
  for (const auto& hook : node.pre_hooks()) {
    auto* d = dynamic_cast<Dispatcher*>(hook.get());
    if (d && d->token == token) return *d;
  }
  auto fresh = std::make_unique<Dispatcher>(token);
  Dispatcher& d = *fresh;
  node.add_pre_hook(std::move(fresh));
  return d;
}

bool nodesOf(PyObject* seq, std::vector<Node*>& out) {
  PyObject* fast = PySequence_Fast(seq, "gcprof_backward_hooks.arm: expected a list of grad_fn");
  if (!fast) return false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  PyObject** items = PySequence_Fast_ITEMS(fast);
  out.reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    Node* node = nodeOf(items[i]);
    if (!node) {
      Py_DECREF(fast);
      PyErr_Format(PyExc_TypeError, "gcprof_backward_hooks.arm: %R is not an autograd node",
                   items[i]);
      return false;
    }
    out.push_back(node);
  }
  Py_DECREF(fast);
  return true;
}

// The nodes between a module's outputs and its parameters when few (see
// backward_ranges.py's _own_subgraph); empty when the walk exceeds the limit.
std::vector<Node*> ownSubgraph(const std::vector<Node*>& outputs) {
  std::vector<Node*> seen;
  std::vector<Node*> stack(outputs.begin(), outputs.end());
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (!node || dynamic_cast<torch::autograd::AccumulateGrad*>(node)) continue;
    bool met = false;
    for (Node* s : seen) met = met || s == node;
    if (met) continue;
    seen.push_back(node);
    if (seen.size() > kOwnGraphLimit) return {};
    for (const auto& edge : node->next_edges()) stack.push_back(edge.function.get());
  }
  return seen;
}

void arm(const char* name, const std::vector<Node*>& outputs,
         const std::vector<Node*>& inputs) {
  std::lock_guard<std::mutex> lock(g_mutex);
  uint64_t token = currentToken();  // one read a call, not one a node
  RangePtr br;
  if (!inputs.empty()) {
    c10::SmallVector<Node*, 4> ends;
    for (Node* in : inputs) {
      bool is_output = false;
      for (Node* out : outputs) is_output = is_output || out == in;
      if (!is_output) ends.push_back(in);
    }
    br = std::make_shared<BackwardRange>(name, ends.size(), ends.empty());
    for (Node* node : ends) dispatcherOf(*node, token).ends.push_back(br);
  } else {
    std::vector<Node*> own = ownSubgraph(outputs);
    br = std::make_shared<BackwardRange>(name, own.size(), false);
    for (Node* node : own) node->add_post_hook(std::make_unique<NodeRan>(br));
  }
  for (Node* node : outputs) {
    // Callers arm after their callees: put them first.
    auto& starts = dispatcherOf(*node, token).starts;
    starts.insert(starts.begin(), br);
  }
}

}  // namespace

namespace gcprof_hooks {

Node* nodeOf(PyObject* obj) {
  if (torch::autograd::THPCppFunction_Check(obj))
    return reinterpret_cast<torch::autograd::THPCppFunction*>(obj)->cdata.get();
  if (THPFunction_Check(obj)) return heldNode(reinterpret_cast<THPFunction*>(obj)->cdata);
  return nullptr;
}

void armBackward(const char* interned_name, const std::vector<Node*>& outputs,
                 const std::vector<Node*>& inputs, bool root) {
  if (!g_enabled.load(std::memory_order_relaxed)) return;
  arm(interned_name, outputs, inputs);
  // A root call's dispatchers are not shared with the next root call.
  if (root) nextToken();
}

}  // namespace gcprof_hooks

namespace {

PyObject* py_arm(PyObject*, PyObject* args) {
  const char* name = nullptr;
  Py_ssize_t name_len = 0;  // a NUL inside ends the name, as it ends a range's name
  PyObject *outputs = nullptr, *inputs = nullptr;
  int root = 0;
  if (!PyArg_ParseTuple(args, "s#OOp", &name, &name_len, &outputs, &inputs, &root)) return nullptr;
  if (!g_enabled.load(std::memory_order_relaxed)) Py_RETURN_NONE;
  std::vector<Node*> out_nodes, in_nodes;
  if (!nodesOf(outputs, out_nodes) || !nodesOf(inputs, in_nodes)) return nullptr;
  try {
    armBackward(internName(name), out_nodes, in_nodes, root);
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* py_install(PyObject*, PyObject* args) {
  unsigned long long start = 0, end = 0, end_io = 0;
  if (!PyArg_ParseTuple(args, "KK|K", &start, &end, &end_io)) return nullptr;
  if (!start && !end_io)  // the injector's, found beside range_start (forward_hooks.cpp uses it)
    end_io = reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, "gcprof_inject_range_end_io"));
  bool injector = !start;
  if (!start) start = reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, "gcprof_inject_range_start"));
  if (!end) end = reinterpret_cast<uintptr_t>(dlsym(RTLD_DEFAULT, "gcprof_inject_range_end"));
  if (!start || !end) {
    PyErr_SetString(PyExc_RuntimeError,
                    "gcprof_inject_range_start/_end not found: the injector is not preloaded");
    return nullptr;
  }
  g_range_start = reinterpret_cast<RangeStartFn>(static_cast<uintptr_t>(start));
  g_range_end = reinterpret_cast<RangeEndFn>(static_cast<uintptr_t>(end));
  g_range_end_io = reinterpret_cast<RangeEndIoFn>(static_cast<uintptr_t>(end_io));
  // Module names interned once (hooks.h); tests' recorders keep the plain entry point.
  void* intern = injector ? dlsym(RTLD_DEFAULT, "gcprof_inject_intern") : nullptr;
  void* start_interned =
      injector ? dlsym(RTLD_DEFAULT, "gcprof_inject_range_start_interned") : nullptr;
  bool both = intern && start_interned;
  g_intern = both ? reinterpret_cast<InternFn>(intern) : nullptr;
  g_range_start_interned = both ? reinterpret_cast<RangeStartFn>(start_interned) : nullptr;
  g_enabled = true;
  Py_RETURN_NONE;
}

PyObject* py_disable(PyObject*, PyObject*) {
  g_enabled = false;
  Py_RETURN_NONE;
}

PyObject* py_open_ranges(PyObject*, PyObject*) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return PyLong_FromSize_t(g_open_count);
}

PyMethodDef kMethods[] = {
    {"install", py_install, METH_VARARGS,
     "install(range_start_addr, range_end_addr[, range_end_io_addr]): 0 resolves the "
     "injector's entry points; without range_end_io the forward hooks stay in python"},
    {"arm", py_arm, METH_VARARGS,
     "arm(name, output_nodes, input_nodes, root): a module call's backward range"},
    {"disable", py_disable, METH_NOARGS, "stop recording (the shim's failsafe)"},
    {"open_ranges", py_open_ranges, METH_NOARGS, "ranges open in running backward passes"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "gcprof_backward_hooks",
                       "The python shim's backward ranges as C++ autograd hooks", -1, kMethods,
                       nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_gcprof_backward_hooks() {
  static bool keyed = pthread_key_create(&g_token_key, nullptr) == 0;
  if (!keyed) {
    PyErr_SetString(PyExc_RuntimeError, "gcprof_backward_hooks: no pthread key left");
    return nullptr;
  }
  PyObject* m = PyModule_Create(&kModule);
  if (m && (PyModule_AddStringConstant(m, "built_for", GCPROF_BUILT_FOR) < 0 ||
            !gcprof_hooks::addForwardHooks(m) || !gcprof_hooks::addTreeFunctions(m) ||
            !gcprof_hooks::addModuleCall(m))) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
