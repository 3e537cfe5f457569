// The CUDA backend in an attach session: started once the host hooks are in,
// when the job has loaded CUDA; flushed and stopped before the writer's last
// drain. In a build without CUDA these only say so.
#pragma once

#include <string>

namespace gcprof::inject::attach {

// What the session's state line says after `cuda=`: "on"; "none" (the job
// has not loaded CUDA, or `--backend host`); "off" with `why` (CUPTI missing,
// another CUPTI client, a build without the CUDA backend).
std::string startDeviceBackend(const std::string& backend, std::string& why);
void flushDeviceBackend();  // the job exits while attached
void stopDeviceBackend();   // detach

}  // namespace gcprof::inject::attach
