// launch_info(): where this process sits in the job, from the variables its launcher set.
//
// Note [Which launcher]
// Launchers nest: mpirun inside a Slurm batch script (whose SLURM_PROCID is 0 in every rank
// mpirun starts), torchrun under srun (SLURM_PROCID numbers the nodes' torchruns). The launcher
// that started this process is the innermost one, and its variables win: Open MPI's, then
// torchrun's, then Slurm's. Each launcher's own variables must agree with each other.
#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "rcuda/dist/process_group.h"

namespace rcuda::dist {

namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

int env_int(const char* name) {
  const char* text = env(name);
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  RCUDA_CHECK(end != text && *end == '\0' && errno == 0 && value >= 0 && value <= 1 << 30,
              ValueError, "launch_info: ", name, "='", text,
              "' is not a rank or a count (a non-negative integer)");
  return static_cast<int>(value);
}

// The value of a companion variable that must be set when `first` is.
int required_int(const char* first, const char* name) {
  RCUDA_CHECK(env(name), ValueError, "launch_info: ", first, " is set but ", name,
              " is not; the launcher sets both");
  return env_int(name);
}

// Slurm's SLURM_TASKS_PER_NODE, "2(x3),1": 2 tasks on each of the first three nodes, 1 on the
// fourth. The count for node `node`, or -1 when the text does not say.
int tasks_on_node(const std::string& text, int node) {
  size_t pos = 0;
  int first_node = 0;
  while (pos < text.size()) {
    size_t used = 0;
    int tasks = 0, repeat = 1;
    try {
      tasks = std::stoi(text.substr(pos), &used);
    } catch (const std::exception&) {
      return -1;
    }
    pos += used;
    if (text.compare(pos, 2, "(x") == 0) {
      pos += 2;
      try {
        repeat = std::stoi(text.substr(pos), &used);
      } catch (const std::exception&) {
        return -1;
      }
      pos += used + 1;  // the ')'
    }
    if (node < first_node + repeat) return tasks;
    first_node += repeat;
    if (pos < text.size() && text[pos] == ',') ++pos;
  }
  return -1;
}

void check_ranges(const LaunchInfo& info, const char* rank_name, const char* size_name,
                  const char* local_rank_name, const char* local_size_name) {
  RCUDA_CHECK(info.world_size >= 1, ValueError, "launch_info: ", size_name, "=", info.world_size,
              " is not a number of processes");
  RCUDA_CHECK(info.rank < info.world_size, ValueError, "launch_info: ", rank_name, "=", info.rank,
              " is not below ", size_name, "=", info.world_size);
  RCUDA_CHECK(info.local_world_size >= 1 && info.local_world_size <= info.world_size, ValueError,
              "launch_info: ", local_size_name, "=", info.local_world_size,
              " must be between 1 and ", size_name, "=", info.world_size);
  RCUDA_CHECK(info.local_rank < info.local_world_size, ValueError, "launch_info: ", local_rank_name,
              "=", info.local_rank, " is not below ", local_size_name, "=", info.local_world_size);
}

LaunchInfo from_open_mpi() {
  LaunchInfo info;
  info.launcher = "mpirun";
  info.rank = env_int("OMPI_COMM_WORLD_RANK");
  info.world_size = required_int("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
  info.local_rank = required_int("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK");
  info.local_world_size =
      env("OMPI_COMM_WORLD_LOCAL_SIZE") ? env_int("OMPI_COMM_WORLD_LOCAL_SIZE") : info.world_size;
  check_ranges(info, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
               "OMPI_COMM_WORLD_LOCAL_SIZE");
  return info;
}

LaunchInfo from_torchrun() {
  LaunchInfo info;
  info.launcher = "torchrun";
  info.rank = env_int("RANK");
  info.world_size = required_int("RANK", "WORLD_SIZE");
  info.local_rank = env("LOCAL_RANK") ? env_int("LOCAL_RANK") : 0;
  info.local_world_size = env("LOCAL_WORLD_SIZE") ? env_int("LOCAL_WORLD_SIZE") : 1;
  if (!env("LOCAL_WORLD_SIZE") && env("LOCAL_RANK")) info.local_world_size = info.local_rank + 1;
  check_ranges(info, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE");
  return info;
}

LaunchInfo from_slurm() {
  LaunchInfo info;
  info.launcher = "slurm";
  info.rank = env_int("SLURM_PROCID");
  const char* size_name = env("SLURM_NTASKS") ? "SLURM_NTASKS" : "SLURM_NPROCS";
  info.world_size = required_int("SLURM_PROCID", size_name);
  info.local_rank = required_int("SLURM_PROCID", "SLURM_LOCALID");
  const char* local_size_name = "SLURM_NTASKS_PER_NODE";
  if (env("SLURM_NTASKS_PER_NODE")) {
    info.local_world_size = env_int("SLURM_NTASKS_PER_NODE");
  } else if (env("SLURM_TASKS_PER_NODE")) {
    local_size_name = "SLURM_TASKS_PER_NODE";
    const int node = env("SLURM_NODEID") ? env_int("SLURM_NODEID") : 0;
    info.local_world_size = tasks_on_node(env("SLURM_TASKS_PER_NODE"), node);
    RCUDA_CHECK(info.local_world_size >= 1, ValueError, "launch_info: SLURM_TASKS_PER_NODE='",
                env("SLURM_TASKS_PER_NODE"), "' does not give the tasks of node ", node,
                " (SLURM_NODEID)");
  } else {
    info.local_world_size = info.local_rank + 1;  // at least this many; Slurm did not say
  }
  check_ranges(info, "SLURM_PROCID", size_name, "SLURM_LOCALID", local_size_name);
  return info;
}

}  // namespace

LaunchInfo launch_info() {
  if (env("OMPI_COMM_WORLD_RANK")) return from_open_mpi();
  if (env("RANK")) return from_torchrun();
  if (env("SLURM_PROCID")) return from_slurm();
  RCUDA_CHECK(!env("WORLD_SIZE"), ValueError,
              "launch_info: WORLD_SIZE is set but RANK is not; torchrun sets both");
  LaunchInfo lone;
  lone.launcher = "none";
  return lone;
}

}  // namespace rcuda::dist
