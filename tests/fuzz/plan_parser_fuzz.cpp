// Any bytes as a plan file: a plan or an AdviceError, never a crash, a hang
// or an exception of another kind (nlohmann's own texts included).
#include <cstddef>
#include <cstdint>
#include <string>

#include "advice_error.h"
#include "plan/plan_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    gcprof::advisor::PlanFile p = gcprof::advisor::parsePlanText(text, "fuzz.json");
    (void)p;
  } catch (const gcprof::advisor::AdviceError&) {
  }
  return 0;
}
