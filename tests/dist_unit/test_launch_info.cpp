// launch_info() from the variables of each launcher, set by hand: Open MPI's mpirun, Slurm's
// srun, torchrun, none; which wins when launchers nest; ValueErrors naming the variables.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "rcuda/dist/process_group.h"

namespace rcuda {
namespace {

const char* const kVariables[] = {"OMPI_COMM_WORLD_RANK",
                                  "OMPI_COMM_WORLD_SIZE",
                                  "OMPI_COMM_WORLD_LOCAL_RANK",
                                  "OMPI_COMM_WORLD_LOCAL_SIZE",
                                  "SLURM_PROCID",
                                  "SLURM_NTASKS",
                                  "SLURM_NPROCS",
                                  "SLURM_LOCALID",
                                  "SLURM_NTASKS_PER_NODE",
                                  "SLURM_TASKS_PER_NODE",
                                  "SLURM_NODEID",
                                  "RANK",
                                  "WORLD_SIZE",
                                  "LOCAL_RANK",
                                  "LOCAL_WORLD_SIZE"};

// Sets exactly `vars` among the launchers' variables for the test, restoring them after.
class LaunchEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVariables) {
      if (const char* value = std::getenv(name)) saved_[name] = value;
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (const char* name : kVariables) unsetenv(name);
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }
  static void set(const std::map<std::string, std::string>& vars) {
    for (const auto& [name, value] : vars) setenv(name.c_str(), value.c_str(), 1);
  }
  // The ValueError's message of launch_info(), or "" when none.
  static std::string error() {
    try {
      dist::launch_info();
    } catch (const ValueError& e) {
      return e.what();
    }
    return "";
  }

 private:
  std::map<std::string, std::string> saved_;
};

void expect_info(const dist::LaunchInfo& info, int rank, int size, int local_rank, int local_size,
                 const char* launcher) {
  EXPECT_EQ(info.rank, rank);
  EXPECT_EQ(info.world_size, size);
  EXPECT_EQ(info.local_rank, local_rank);
  EXPECT_EQ(info.local_world_size, local_size);
  EXPECT_EQ(info.launcher, launcher);
}

TEST_F(LaunchEnv, ALoneProcessIsRankZeroOfOne) {
  expect_info(dist::launch_info(), 0, 1, 0, 1, "none");
}

TEST_F(LaunchEnv, OpenMpi) {
  set({{"OMPI_COMM_WORLD_RANK", "5"},
       {"OMPI_COMM_WORLD_SIZE", "8"},
       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  expect_info(dist::launch_info(), 5, 8, 1, 4, "mpirun");
}

TEST_F(LaunchEnv, Slurm) {
  set({{"SLURM_PROCID", "3"},
       {"SLURM_NTASKS", "4"},
       {"SLURM_LOCALID", "1"},
       {"SLURM_NTASKS_PER_NODE", "2"}});
  expect_info(dist::launch_info(), 3, 4, 1, 2, "slurm");
}

TEST_F(LaunchEnv, SlurmTasksPerNodeListGivesThisNodesCount) {
  // 3 tasks on each of nodes 0 and 1, 1 on node 2: rank 6 is node 2's only task.
  set({{"SLURM_PROCID", "6"},
       {"SLURM_NTASKS", "7"},
       {"SLURM_LOCALID", "0"},
       {"SLURM_TASKS_PER_NODE", "3(x2),1"},
       {"SLURM_NODEID", "2"}});
  expect_info(dist::launch_info(), 6, 7, 0, 1, "slurm");
  set({{"SLURM_PROCID", "4"}, {"SLURM_LOCALID", "1"}, {"SLURM_NODEID", "1"}});
  expect_info(dist::launch_info(), 4, 7, 1, 3, "slurm");
}

TEST_F(LaunchEnv, Torchrun) {
  set({{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "2"}});
  expect_info(dist::launch_info(), 2, 4, 0, 2, "torchrun");
}

TEST_F(LaunchEnv, TheInnermostLauncherWins) {
  // mpirun inside a Slurm batch script, whose SLURM_PROCID is 0 in every rank.
  set({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_LOCALID", "0"}});
  set({{"OMPI_COMM_WORLD_RANK", "1"},
       {"OMPI_COMM_WORLD_SIZE", "2"},
       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  expect_info(dist::launch_info(), 1, 2, 1, 2, "mpirun");
  // torchrun under srun.
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                           "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"})
    unsetenv(name);
  set({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "3"}, {"LOCAL_WORLD_SIZE", "4"}});
  expect_info(dist::launch_info(), 3, 4, 3, 4, "torchrun");
}

TEST_F(LaunchEnv, ErrorsNameTheVariables) {
  set({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "0"}});
  EXPECT_NE(error().find("SLURM_PROCID=4 is not below SLURM_NTASKS=4"), std::string::npos)
      << error();
  set({{"SLURM_PROCID", "x1"}});
  EXPECT_NE(error().find("SLURM_PROCID='x1' is not a rank"), std::string::npos) << error();
  unsetenv("SLURM_PROCID");
  unsetenv("SLURM_NTASKS");
  set({{"RANK", "1"}});
  EXPECT_NE(error().find("RANK is set but WORLD_SIZE is not"), std::string::npos) << error();
  set({{"WORLD_SIZE", "2"}, {"LOCAL_RANK", "-1"}});
  EXPECT_NE(error().find("LOCAL_RANK='-1'"), std::string::npos) << error();
  set({{"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}});
  EXPECT_NE(error().find("LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2"), std::string::npos)
      << error();
  unsetenv("RANK");
  EXPECT_NE(error().find("WORLD_SIZE is set but RANK is not"), std::string::npos) << error();
  unsetenv("WORLD_SIZE");
  set({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  EXPECT_NE(error().find("OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_LOCAL_RANK is not"),
            std::string::npos)
      << error();
  set({{"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}});
  EXPECT_NE(error().find("OMPI_COMM_WORLD_LOCAL_SIZE=3 must be between 1 and "
                         "OMPI_COMM_WORLD_SIZE=2"),
            std::string::npos)
      << error();
}

}  // namespace
}  // namespace rcuda
