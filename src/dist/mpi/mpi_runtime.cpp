// MPI's initialisation, finalisation, lock and polling.
//
// Note [MPI threads]
// rcuda asks for MPI_THREAD_SERIALIZED and holds one process-wide lock around each MPI call it
// makes. Collectives are called from whichever thread runs them (the data-parallel reducer
// calls from the thread running backward, R from its main thread) and waited on from another,
// so FUNNELED (main thread only) is not enough; the lock makes SERIALIZED's promise true. It
// does not ask for MPI_THREAD_MULTIPLE: the lock needs no more, and MULTIPLE makes Open MPI lock
// inside every call and rules out some transports. An MPI that someone else initialised is
// used when it gives at least SERIALIZED.
#include "dist/mpi/mpi_runtime.h"

#include <atomic>
#include <cstdlib>
#include <thread>

#include "rcuda/dist/process_group.h"

namespace rcuda::dist::mpi {

namespace {

bool g_initialised_here = false;
std::atomic<bool> g_leave_unfinalised{false};

void finalise_at_exit() {
  if (g_leave_unfinalised) return;
  std::lock_guard<std::mutex> lock(mpi_mutex());
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    default:
      return "MPI_THREAD_MULTIPLE";
  }
}

}  // namespace

std::mutex& mpi_mutex() {
  static std::mutex mutex;
  return mutex;
}

void ensure_initialised() {
  std::lock_guard<std::mutex> lock(mpi_mutex());
  int initialised = 0, done = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&done);
  RCUDA_CHECK(!done, DistError,
              "init_process_group: MPI was already finalised in this process; start a new one");
  int provided = MPI_THREAD_SINGLE;
  if (!initialised) {
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    g_initialised_here = true;
    std::atexit(finalise_at_exit);
  } else {
    MPI_Query_thread(&provided);
  }
  RCUDA_CHECK(provided >= MPI_THREAD_SERIALIZED, DistError, "init_process_group: MPI gives ",
              thread_level_name(provided),
              ", but rcuda calls MPI from more than one thread and needs MPI_THREAD_SERIALIZED",
              g_initialised_here ? "" : " (initialise MPI with MPI_Init_thread and that level)");
}

void leave_unfinalised() { g_leave_unfinalised = true; }

bool finalised() {
  int done = 0;
  MPI_Finalized(&done);
  return done != 0;
}

std::string error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(text, static_cast<size_t>(length));
}

void check(int rc, const std::string& call) {
  if (rc != MPI_SUCCESS) throw DistError(call + ": " + error_text(rc));
}

bool poll_until(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline) {
  auto pause = std::chrono::microseconds(0);
  for (int round = 0;; ++round) {
    {
      std::lock_guard<std::mutex> lock(mpi_mutex());
      if (done()) return true;
    }
    if (std::chrono::steady_clock::now() > deadline) return false;
    if (round < 100) {
      std::this_thread::yield();
    } else {
      pause = std::min(std::chrono::microseconds(1000), pause + std::chrono::microseconds(20));
      std::this_thread::sleep_for(pause);
    }
  }
}

}  // namespace rcuda::dist::mpi
