#include "plan/memory_measure.h"

#include <stdexcept>

#include "advice_error.h"

namespace gcprof::advisor {

std::string toString(MemoryMeasure m) { return m == MemoryMeasure::Reserved ? "reserved" : "allocated"; }

MemoryMeasure parseMemoryMeasure(const std::string& text) {
  if (text == "reserved") return MemoryMeasure::Reserved;
  if (text == "allocated") return MemoryMeasure::Allocated;
  throw AdviceError("--memory " + text + ": expected reserved or allocated");
}

MemoryChoice chooseMemory(const Trace& trace, const AllocationFilter& filter,
                          std::optional<MemoryMeasure> requested) {
  MemoryChoice c;
  std::string refusal;
  if (!filter.device) {
    refusal = "the run recorded host memory; reserved memory is the CUDA caching allocator's "
              "(record the job on a GPU with --backend cuda)";
  } else if (filter.kind != AllocKind::Tensor) {
    refusal = "the run recorded the allocator's segments only, no tensor events to replay; "
              "its device peak already counts segments";
  } else {
    try {
      c.allocator = AllocatorSettings::fromRunEnvironment(trace.run.env);
    } catch (const std::invalid_argument& e) {
      throw AdviceError(std::string("run ") + std::to_string(trace.run.id) + ": " + e.what() +
                        "; give --memory allocated to budget tensor bytes instead");
    }
    if (!c.allocator.native)
      refusal = "the run used backend:cudaMallocAsync, whose driver pool gcprof does not model";
    else
      c.reserved_modelled = true;
  }
  if (requested == MemoryMeasure::Reserved && !c.reserved_modelled)
    throw AdviceError("--memory reserved: " + refusal + "; give --memory allocated");
  c.measure = requested ? *requested : (c.reserved_modelled ? MemoryMeasure::Reserved : MemoryMeasure::Allocated);
  std::string conf = c.allocator.text.empty() ? "default settings" : "PYTORCH_CUDA_ALLOC_CONF=" + c.allocator.text;
  if (c.measure == MemoryMeasure::Reserved)
    c.why = "reserved (the CUDA caching allocator's segments, predicted by replaying the tensor events with " +
            conf + ")";
  else if (c.reserved_modelled)
    c.why = "allocated (tensor bytes, as asked; reserved predicted alongside with " + conf + ")";
  else if (!filter.device)
    c.why = "allocated (a host run: no caching allocator)";
  else
    c.why = "allocated (" + refusal + ")";
  return c;
}

}  // namespace gcprof::advisor
