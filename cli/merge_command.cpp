// gcprof merge: one trace from the traces each node of a multi-node job
// recorded (profiler/store/trace_merge.h does the work).
#include <cstdio>

#include "commands.h"
#include "trace_merge.h"

namespace gcprof::cli {

void addMerge(CLI::App& app, int& exit_code) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto out = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "merge", "Combine the traces the nodes of a multi-node job recorded (one\n"
               "`gcprof record -- torchrun --nnodes=N --node_rank=K ...` per node) into one\n"
               "trace in which they are one job; advise and verify then see every rank.");
  // An empty name was taken for no file at all, and the error named the next one.
  auto named = [](const std::string& path) { return path.empty() ? std::string("an empty name is not a file") : ""; };
  sub->add_option("out", *out, "The merged trace (a new file)")->required()->check(named);
  sub->add_option("traces", *files, "Two or more node traces; the first one's launcher leads the job")
      ->required()
      ->expected(2, -1)
      ->check(named);
  sub->footer("Example:\n  gcprof merge job.db node0.db node1.db && gcprof advise job.db --budget 80%");
  sub->callback([files, out, &exit_code] {
    MergeResult r = mergeTraces(*out, *files);
    std::printf("gcprof merge: %zu traces into %s: job run %lld with %d ranks (%d runs in all)\n",
                files->size(), out->c_str(), r.job_run, r.ranks, r.runs);
    exit_code = 0;
  });
}

}  // namespace gcprof::cli
