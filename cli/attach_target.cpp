#include "attach_target.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

namespace gcprof::cli {
namespace {

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> splitNul(const std::string& raw) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : raw) {
    if (c) {
      cur += c;
    } else {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string link(const std::string& path) {
  char buf[4096];
  ssize_t n = readlink(path.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

std::string userName(uid_t uid) {
  passwd* pw = getpwuid(uid);
  return pw ? pw->pw_name : "uid " + std::to_string(uid);
}

bool hasCapSysPtrace() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("CapEff:", 0) == 0)
      return (std::strtoull(line.c_str() + 7, nullptr, 16) >> 19) & 1;  // CAP_SYS_PTRACE = 19
  return false;
}

}  // namespace

AttachTarget inspectTarget(pid_t pid) {
  std::string proc = "/proc/" + std::to_string(pid);
  struct stat st;
  if (pid <= 0 || stat(proc.c_str(), &st) != 0)
    throw AttachRefused("no process " + std::to_string(pid));
  AttachTarget t;
  t.pid = pid;
  t.uid = st.st_uid;
  if (t.uid != geteuid() && geteuid() != 0)
    throw AttachRefused("process " + std::to_string(pid) + " belongs to " + userName(t.uid) +
                        ", not to you (" + userName(geteuid()) +
                        "): gcprof attaches only to your own processes; run it as that user "
                        "(or as root)");
  if (pid == getpid()) throw AttachRefused("gcprof cannot attach to itself");
  t.exe = link(proc + "/exe");
  t.argv = splitNul(readAll(proc + "/cmdline"));
  t.cwd = link(proc + "/cwd");
  t.env = splitNul(readAll(proc + "/environ"));
  std::string maps = readAll(proc + "/maps");
  if (maps.empty())
    throw AttachRefused("cannot read /proc/" + std::to_string(pid) +
                        "/maps (the process ended, or it is not dumpable)");
  if (maps.find("libgcprof_inject.so") != std::string::npos)
    throw AttachRefused("process " + std::to_string(pid) +
                        " is recorded by `gcprof record` already (libgcprof_inject.so is loaded "
                        "in it); use `gcprof ctl TRACE pause|resume` to choose what it records");
  t.loaded_before = maps.find("libgcprof_attach.so") != std::string::npos;
  std::string base = t.exe.substr(t.exe.rfind('/') + 1);
  t.python = base.rfind("python", 0) == 0 || maps.find("libpython3") != std::string::npos;
  bool torch = maps.find("libtorch_cpu.so") != std::string::npos ||
               maps.find("libtorch.so") != std::string::npos;
  if (!torch)
    throw AttachRefused("process " + std::to_string(pid) + " (" + (base.empty() ? "?" : base) +
                        ") is not a PyTorch or LibTorch job: no libtorch in its memory map" +
                        (t.python ? " (a python job can be attached once it has imported torch)"
                                  : ""));
  return t;
}

void requirePtraceAllowed(const AttachTarget&) {
  const char* file = std::getenv("GCPROF_YAMA_PTRACE_SCOPE");  // tests point it elsewhere
  std::ifstream in(file ? file : "/proc/sys/kernel/yama/ptrace_scope");
  int scope = 0;
  if (!(in >> scope)) return;  // no yama: only uid and capabilities matter
  if (scope >= 3)
    throw AttachRefused(
        "the kernel forbids tracing any process (kernel.yama.ptrace_scope = 3, until reboot): "
        "gcprof attach cannot work on this machine; start the job under `gcprof record` instead");
  if (scope >= 1 && !hasCapSysPtrace())
    throw AttachRefused(
        std::string("the kernel lets ") +
        (scope == 1 ? "a process trace only its own children" : "only CAP_SYS_PTRACE trace") +
        " (kernel.yama.ptrace_scope = " + std::to_string(scope) +
        ") and gcprof has no CAP_SYS_PTRACE: run gcprof attach as root (sudo)" +
        (scope == 1 ? ", or allow it with `sudo sysctl kernel.yama.ptrace_scope=0`" : "") +
        "; in a container, start it with `--cap-add SYS_PTRACE`");
}

std::string findGdb() {
  if (const char* g = std::getenv("GCPROF_GDB")) {
    if (access(g, X_OK) == 0) return g;
  } else if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':'))
      if (!dir.empty() && access((dir + "/gdb").c_str(), X_OK) == 0) return dir + "/gdb";
  }
  throw AttachRefused(
      "gdb not found: gcprof attach loads its library into the job with gdb; install it "
      "(apt-get install gdb; scripts/install-deps does)");
}

std::string ptraceRefusedAdvice() {
  return "the kernel did not let gdb trace the process (ptrace: Operation not permitted): "
         "check kernel.yama.ptrace_scope (`sudo sysctl kernel.yama.ptrace_scope=0`), run gcprof "
         "attach as root, or in a container add CAP_SYS_PTRACE (`--cap-add SYS_PTRACE`)";
}

}  // namespace gcprof::cli
