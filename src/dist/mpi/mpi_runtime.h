// MPI itself: initialised once per process by whoever needs it first, finalised at exit when
// rcuda initialised it, and entered through one lock (Note [MPI threads]).
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>

namespace rcuda::dist::mpi {

// Initialises MPI unless it is; DistError when it was finalised or gives too few threads.
void ensure_initialised();
// Held around every MPI call rcuda makes.
std::mutex& mpi_mutex();
// After a failure, requests to dead ranks stay pending for ever: MPI_Finalize could then wait
// for them, so exit leaves MPI as it is (mpirun reports the rank's non-zero exit).
void leave_unfinalised();
bool finalised();

// DistError "<call>: <MPI's message>" unless rc is MPI_SUCCESS.
void check(int rc, const std::string& call);
std::string error_text(int rc);

// Calls `done` (under the MPI lock) until it returns true or `deadline` passes; false then. Spins
// briefly, then sleeps up to a millisecond between calls, so that waiting ranks leave the cores
// to the ones still computing.
bool poll_until(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline);

}  // namespace rcuda::dist::mpi
