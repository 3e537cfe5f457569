#include "run_environment.h"

#include "utf8_text.h"

#include <cstdio>

namespace gcprof {
namespace {

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Only what changes a training run's behaviour; never credentials, never
// what loads code into the job (loaderOrInjector).
bool relevant(const std::string& name) {
  if (loaderOrInjector(name)) return false;
  static const char* kPrefixes[] = {"PYTORCH_", "TORCH", "CUDA_", "CUBLAS", "CUDNN", "NCCL_",
                                    "OMP_", "MKL_", "OPENBLAS", "KMP_", "RANK", "LOCAL_RANK",
                                    "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_", "HF_",
                                    "TRANSFORMERS_", "TOKENIZERS_", "PYTHONHASHSEED",
                                    // accelerate's settings (mixed precision, accumulation
                                    // steps, CPU) when given in the environment, not the config
                                    "ACCELERATE_"};
  for (const char* bad : {"TOKEN", "SECRET", "PASSWORD", "KEY"})
    if (name.find(bad) != std::string::npos && name != "TOKENIZERS_PARALLELISM") return false;
  for (const char* p : kPrefixes)
    if (startsWith(name, p)) return true;
  return false;
}

}  // namespace

bool loaderOrInjector(const std::string& name) {
  // The dynamic loader's (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, ...), the
  // CUDA and NVTX injection libraries, gcprof's own settings, and python's
  // start-up (PYTHONPATH carries the shim; PYTHONSTARTUP runs a file).
  // PYTHONHASHSEED only seeds hashing: it shapes training and is kept.
  for (const char* p : {"LD_", "DYLD_", "GCPROF_", "CUDA_INJECTION", "NVTX_INJECTION", "PYTHON"})
    if (startsWith(name, p)) return name != "PYTHONHASHSEED";
  return name == "GLIBC_TUNABLES";
}

std::string whyNotRestored(const std::string& name) {
  if (loaderOrInjector(name))
    return "loads code into the job or configures gcprof; verify sets its own";
  if (!relevant(name)) return "not a training setting gcprof records (the trace was edited?)";
  return "";
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : validUtf8(s)) {  // JSON is UTF-8; argv and env are bytes
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string relevantEnvironmentJson(char** environ) {
  std::string out = "{";
  bool first = true;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq == std::string::npos || !relevant(kv.substr(0, eq))) continue;
    if (!first) out += ",";
    first = false;
    out += jsonString(kv.substr(0, eq)) + ":" + jsonString(kv.substr(eq + 1));
  }
  return out + "}";
}

}  // namespace gcprof
