#include "process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "wick/error.h"

extern char** environ;

namespace wick::cli {

namespace {

std::string self_path() {
  std::string buf(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0)
    fail(ErrorKind::Internal, "run_self", "cannot read /proc/self/exe: ", std::strerror(errno));
  buf.resize(static_cast<size_t>(n));
  return buf;
}

std::vector<std::string> child_environment(const EnvChanges& changes) {
  std::vector<std::string> env;
  for (char** e = environ; *e; e++) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool changed = false;
    for (const auto& c : changes) changed |= c.first == name;
    if (!changed) env.push_back(entry);
  }
  for (const auto& [name, value] : changes)
    if (value) env.push_back(name + "=" + *value);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (std::string& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string run_self(const std::vector<std::string>& args, const EnvChanges& env,
                     const std::string& what) {
  std::vector<std::string> argv_s{self_path()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<std::string> env_s = child_environment(env);
  std::vector<char*> argv = c_strings(argv_s), envp = c_strings(env_s);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    fail(ErrorKind::Internal, "run_self", what, ": pipe failed: ", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  pid_t pid = 0;
  const int rc =
      ::posix_spawn(&pid, argv_s[0].c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    fail(ErrorKind::Internal, "run_self", what, ": cannot start ", argv_s[0], ": ",
         std::strerror(rc));
  }
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail(ErrorKind::Internal, "run_self", what, ": child process ",
         WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                           : "was killed by signal " + std::to_string(WTERMSIG(status)));
  return out;
}

}  // namespace wick::cli
