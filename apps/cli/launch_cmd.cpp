// `rcuda launch`: starts N ranks of a program on this machine through Open MPI's mpirun, as
// torchrun does for PyTorch, and prints their output with a "[rank r] " prefix (docs/cli.md).
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "commands.h"

namespace rcuda::cli {
namespace {

pid_t g_mpirun = -1;

// Ctrl-C and termination go to mpirun, which passes them on to the ranks and then exits.
void forward_signal(int signal) {
  if (g_mpirun > 0) kill(g_mpirun, signal);
}

// The variable that shows this process is already a rank of a launched job, or nullptr.
const char* launched_by() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(name)) return name;
  const char* step_tasks = std::getenv("SLURM_STEP_NUM_TASKS");
  if (step_tasks && std::atoi(step_tasks) > 1) return "SLURM_STEP_NUM_TASKS";
  return nullptr;
}

// Rewrites mpirun's "[1,3]<stdout>:" tags as "[rank 3] " and writes each whole line to `out`.
class LineTagger {
 public:
  explicit LineTagger(FILE* out) : out_(out) {}
  void feed(const char* data, size_t n) {
    pending_.append(data, n);
    size_t start = 0, end;
    while ((end = pending_.find('\n', start)) != std::string::npos) {
      write_line(pending_.substr(start, end - start));
      start = end + 1;
    }
    pending_.erase(0, start);
  }
  void flush() {
    if (!pending_.empty()) write_line(pending_);
    pending_.clear();
  }

 private:
  void write_line(const std::string& line) {
    static const std::regex tag(R"(^\[\d+,(\d+)\]<std(out|err)>:)");
    std::smatch m;
    if (std::regex_search(line, m, tag))
      std::fprintf(out_, "[rank %s] %s\n", m[1].str().c_str(), m.suffix().str().c_str());
    else
      std::fprintf(out_, "%s\n", line.c_str());
    std::fflush(out_);
  }

  FILE* out_;
  std::string pending_;
};

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

int launch(const LaunchArgs& args) {
  std::vector<std::string> command = args.command;
  if (!command.empty() && command.front() == "--") command.erase(command.begin());
  if (command.empty()) {
    std::fprintf(stderr,
                 "rcuda launch: no program to run (rcuda launch --nproc-per-node N "
                 "[--] PROGRAM ARGS...)\n");
    return 2;
  }
  if (const char* name = launched_by()) {
    std::fprintf(stderr,
                 "rcuda launch: this process is already a rank of a launched job (%s=%s): run "
                 "the program directly; each rank finds its place from the launcher's "
                 "variables\n",
                 name, std::getenv(name));
    return 2;
  }
  std::vector<std::string> argv = {args.mpirun, "--oversubscribe", "--bind-to", "none",
                                   "--tag-output"};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");  // containers run as root
  argv.insert(argv.end(), {"-np", std::to_string(args.nproc_per_node)});
  argv.insert(argv.end(), command.begin(), command.end());

  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) {
    std::fprintf(stderr, "rcuda launch: pipe: %s\n", std::strerror(errno));
    return 1;
  }
  g_mpirun = fork();
  if (g_mpirun < 0) {
    std::fprintf(stderr, "rcuda launch: fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (g_mpirun == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    std::vector<char*> c_argv;
    c_argv.reserve(argv.size() + 1);
    for (std::string& a : argv) c_argv.push_back(a.data());
    c_argv.push_back(nullptr);
    execvp(c_argv[0], c_argv.data());
    std::fprintf(stderr,
                 "rcuda launch: cannot run %s: %s (install Open MPI: openmpi-bin, or "
                 "pass --mpirun PATH)\n",
                 args.mpirun.c_str(), std::strerror(errno));
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  struct sigaction forward {};
  forward.sa_handler = forward_signal;
  sigaction(SIGINT, &forward, nullptr);
  sigaction(SIGTERM, &forward, nullptr);
  sigaction(SIGHUP, &forward, nullptr);

  LineTagger out(stdout), err(stderr);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buffer[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        (i == 0 ? out : err).feed(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  out.flush();
  err.flush();
  int status = 0;
  while (waitpid(g_mpirun, &status, 0) < 0 && errno == EINTR) {
  }
  return exit_status(status);
}

}  // namespace rcuda::cli
