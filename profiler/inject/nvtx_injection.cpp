// NVTX v3 injection: a program using NVTX (header-only) loads the library in
// NVTX_INJECTION64_PATH on its first NVTX call and asks it to fill the
// function table. Push/pop and start/end ranges of any NVTX user become
// ranges in the trace (domain "nvtx").
#include <nvtx3/nvToolsExt.h>

#include "recorder.h"
#include "trace.h"

namespace gcprof::inject {
namespace {

constexpr int kNvtxDepth = 128;
__thread uint64_t t_pushed[kNvtxDepth] __attribute__((tls_model("initial-exec")));
__thread int t_depth __attribute__((tls_model("initial-exec"))) = 0;

const int kNvtx = static_cast<int>(gcprof::RangeDomain::Nvtx);

const char* messageOf(const nvtxEventAttributes_t* attr) {
  if (attr && attr->messageType == NVTX_MESSAGE_TYPE_ASCII && attr->message.ascii)
    return attr->message.ascii;
  return "(nvtx)";
}

int pushName(const char* name) {
  uint64_t id = rangeStart(name, 0, kNvtx);
  if (t_depth < kNvtxDepth) t_pushed[t_depth] = id;
  return t_depth++;
}

int NVTX_API pushA(const char* message) { return pushName(message ? message : "(nvtx)"); }
int NVTX_API pushEx(const nvtxEventAttributes_t* attr) { return pushName(messageOf(attr)); }
int NVTX_API pop() {
  if (t_depth == 0) return -1;
  --t_depth;
  if (t_depth < kNvtxDepth) rangeEnd(t_pushed[t_depth]);
  return t_depth;
}
nvtxRangeId_t NVTX_API startA(const char* message) {
  return rangeStart(message ? message : "(nvtx)", 0, kNvtx);
}
nvtxRangeId_t NVTX_API startEx(const nvtxEventAttributes_t* attr) {
  return rangeStart(messageOf(attr), 0, kNvtx);
}
void NVTX_API end(nvtxRangeId_t id) { rangeEnd(id); }

template <typename F>
void install(NvtxFunctionTable table, unsigned size, NvtxCallbackIdCore id, F fn) {
  if (static_cast<unsigned>(id) < size && table[id]) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace
}  // namespace gcprof::inject

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t getExportTable) {
  using namespace gcprof::inject;
  auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(getExportTable(NVTX_ETID_CALLBACKS));
  if (!callbacks || !callbacks->GetModuleFunctionTable) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) || !table) return 0;
  install(table, size, NVTX_CBID_CORE_RangePushA, pushA);
  install(table, size, NVTX_CBID_CORE_RangePushEx, pushEx);
  install(table, size, NVTX_CBID_CORE_RangePop, pop);
  install(table, size, NVTX_CBID_CORE_RangeStartA, startA);
  install(table, size, NVTX_CBID_CORE_RangeStartEx, startEx);
  install(table, size, NVTX_CBID_CORE_RangeEnd, end);
  return 1;
}
