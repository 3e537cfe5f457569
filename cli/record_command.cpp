// gcprof record: run an unmodified training job with the injector attached.
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

#include "commands.h"
#include "recorded_launch.h"
#include "size_parse.h"
#include "trace_store.h"

namespace gcprof::cli {
namespace {

struct RecordArgs {
  std::string output = "gcprof.db";
  std::string backend = "auto";
  std::string cuda_allocator = "native";
  std::string min_bytes = "1KiB";
  std::string steps;
  std::string flush_wait = "5";
  std::string name;
  bool paused = false;
  bool ops = false;
  std::vector<std::string> command;
};

int runRecord(const RecordArgs& a) {
  LaunchOptions o;
  o.trace = absolutePath(a.output);
  o.argv = a.command;
  o.backend = a.backend;
  o.cuda_allocator = a.cuda_allocator;
  try {
    o.min_bytes = parseBytes(a.min_bytes);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--min-bytes: ") + e.what());
  }
  if (!a.steps.empty()) parseStepWindow(a.steps);  // the injector reads the text; reject it here
  o.steps = a.steps;
  o.flush_wait_ms = parseFlushWaitMs(a.flush_wait);
  o.name = a.name;
  o.paused = a.paused;
  if (a.ops) o.extra_env["GCPROF_OPS"] = "1";
  LaunchResult r = launchRecorded(o);
  TraceStore store(o.trace, TraceStore::Mode::ReadOnly);
  for (long long id : r.runs) {
    RunInfo run = store.run(id);
    std::fprintf(stderr, "gcprof: run %lld (%s, pid %lld) recorded into %s\n", id,
                 run.status.c_str(), static_cast<long long>(run.pid), a.output.c_str());
    if (a.backend == "cuda" && run.backend != "cuda")
      std::fprintf(stderr,
                   "gcprof: run %lld: --backend cuda was asked, but the job never attached to "
                   "CUDA (no GPU, no driver, or no CUDA context): host memory was recorded\n",
                   id);
  }
  return r.exit_code;
}

}  // namespace

void addRecord(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RecordArgs>();
  CLI::App* sub = app.add_subcommand(
      "record",
      "Run COMMAND with gcprof attached and record its memory per layer.\n"
      "The job runs unmodified; its exit code, stdin, stdout and stderr pass through.");
  sub->add_option("-o,--output", args->output, "Trace file (appended to when it exists)")
      ->capture_default_str();
  sub->add_option("--cuda-allocator", args->cuda_allocator,
                  "native: the job keeps PyTorch's caching allocator (default; its segments are\n"
                  "recorded) | async: sets PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, every tensor\n"
                  "a cudaMallocAsync the CUDA backend sees (docs/cuda.md). The job's own setting wins")
      ->check(CLI::IsMember({"native", "async"}))
      ->capture_default_str();
  sub->add_option("--backend", args->backend, "auto | host | cuda")
      ->check(CLI::IsMember({"auto", "host", "cuda"}))
      ->capture_default_str();
  sub->add_option("--min-bytes", args->min_bytes,
                  "Smaller host allocations are only counted, not recorded one by one")
      ->capture_default_str();
  sub->add_option("--steps", args->steps,
                  "Record only steps A..B-1 (A:B, A: for open-ended); outside, no ranges are kept");
  sub->add_option("--flush-wait", args->flush_wait,
                  "Seconds a job told to stop (SIGTERM, SIGINT) waits for its events to reach "
                  "the trace before it dies (0..3600)")
      ->capture_default_str();
  sub->add_option("--name", args->name, "A tag for this run");
  sub->add_flag("--paused", args->paused,
                "Start with recording paused; resume with `gcprof ctl TRACE resume`");
  sub->add_flag("--ops", args->ops,
                "Also record every aten operator inside module forwards (python jobs), so that "
                "`advise` can plan selective checkpoints (docs/plan.md)");
  sub->add_option("command", args->command, "The job to record, after --")->required();
  sub->footer(
      "Examples:\n"
      "  gcprof record -o gpt.db -- python3 train.py --steps 4\n"
      "  gcprof record -o gpt.db --steps 10:12 -- ./train   # only steps 10 and 11");
  sub->callback([args, &exit_code] { exit_code = runRecord(*args); });
}

}  // namespace gcprof::cli
