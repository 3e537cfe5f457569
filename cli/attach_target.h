// What `gcprof attach` needs to know about the process before touching it,
// read from /proc: whose it is, whether it runs PyTorch or LibTorch, whether
// gcprof is in it already, whether the kernel lets us trace it. Every refusal
// is thrown (AttachRefused) before anything is done to the job.
#pragma once

#include <sys/types.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace gcprof::cli {

struct AttachRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct AttachTarget {
  pid_t pid = 0;
  uid_t uid = 0;
  std::string exe;
  std::vector<std::string> argv;  // /proc/PID/cmdline
  std::string cwd;                // /proc/PID/cwd
  std::vector<std::string> env;   // /proc/PID/environ, "K=V"
  bool python = false;            // a CPython process (its shim is attached too)
  bool loaded_before = false;     // libgcprof_attach.so is in it (an earlier attach)
};

// Throws AttachRefused: no such process, another user's, not PyTorch or
// LibTorch, recorded by `gcprof record` already.
AttachTarget inspectTarget(pid_t pid);

// Throws AttachRefused when yama's ptrace_scope (or a missing CAP_SYS_PTRACE)
// will make gdb fail; says which and how to allow it.
void requirePtraceAllowed(const AttachTarget& target);

// The gdb to inject with (GCPROF_GDB, else gdb on PATH); throws AttachRefused.
std::string findGdb();

// What to say when gdb's ptrace attach was refused anyway.
std::string ptraceRefusedAdvice();

}  // namespace gcprof::cli
