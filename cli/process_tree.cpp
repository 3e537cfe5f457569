#include "process_tree.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

namespace gcprof::cli {
namespace {

// The state letter and parent pid of /proc/PID/stat; false when the
// process is gone.
bool readStat(const std::string& pid, char& state, long& ppid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
  size_t close = line.rfind(')');
  if (close == std::string::npos) return false;
  return std::sscanf(line.c_str() + close + 1, " %c %ld", &state, &ppid) == 2;
}

// pid -> parent pid of every process we can see.
std::multimap<pid_t, pid_t> childrenByParent() {
  std::multimap<pid_t, pid_t> out;
  DIR* proc = opendir("/proc");
  if (!proc) return out;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end) continue;
    char state = 0;
    long ppid = 0;
    if (!readStat(e->d_name, state, ppid)) continue;
    if (state == 'Z') continue;  // already dead, waiting for its parent
    out.emplace(static_cast<pid_t>(ppid), static_cast<pid_t>(pid));
  }
  closedir(proc);
  return out;
}

}  // namespace

bool running(pid_t pid) {
  char state = 0;
  long ppid = 0;
  return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM) &&
         readStat(std::to_string(pid), state, ppid) && state != 'Z';
}

std::vector<pid_t> descendantsOf(pid_t root) {
  std::multimap<pid_t, pid_t> children = childrenByParent();
  std::vector<pid_t> out;
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    auto [b, e] = children.equal_range(p);
    for (auto it = b; it != e; ++it) {
      out.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return out;
}

void terminateTree(pid_t root, int grace_ms) {
  // Collected before signalling: once a parent dies its children move to init.
  std::vector<pid_t> tree = descendantsOf(root);
  kill(root, SIGTERM);
  for (pid_t p : tree) kill(p, SIGTERM);
  // The grace covers the top process too: a job of one process (no
  // launcher) also gets its --flush-wait before SIGKILL.
  for (int waited = 0; waited < grace_ms; waited += 100) {
    bool any = running(root);
    for (pid_t p : tree) any = any || running(p);
    if (!any) break;
    timespec ts{0, 100 * 1000000L};
    nanosleep(&ts, nullptr);
  }
  for (pid_t p : tree)
    if (running(p)) kill(p, SIGKILL);
  kill(root, SIGKILL);  // harmless when it already exited (a zombie until reaped)
}

}  // namespace gcprof::cli
