// The verbs of `gcprof`. Each adds its subcommand to the app and, when it is
// chosen, runs and stores the process exit code in `exit_code`.
// Exit codes: 0 ok; 1 a gate or check failed (verify: a failing job fails
// its "job completed" gate); 2 bad input (usage, damaged trace, wrong plan);
// `record` passes the job's own code through.
#pragma once

#include <CLI/CLI.hpp>

namespace gcprof::cli {

void addRecord(CLI::App& app, int& exit_code);   // cli/record_command.cpp
void addShow(CLI::App& app, int& exit_code);     // cli/show_command.cpp
void addCtl(CLI::App& app, int& exit_code);      // cli/ctl_command.cpp
void addAdvise(CLI::App& app, int& exit_code);   // cli/advise_command.cpp
void addVerify(CLI::App& app, int& exit_code);   // cli/verify_command.cpp
void addApply(CLI::App& app, int& exit_code);    // cli/apply_command.cpp
void addReport(CLI::App& app, int& exit_code);   // cli/report_command.cpp
void addExport(CLI::App& app, int& exit_code);   // cli/export_command.cpp
void addMerge(CLI::App& app, int& exit_code);    // cli/merge_command.cpp
void addAttach(CLI::App& app, int& exit_code);   // cli/attach_command.cpp

}  // namespace gcprof::cli
