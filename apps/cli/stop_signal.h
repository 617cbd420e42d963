// SIGINT and SIGTERM as a flag, for the subcommands that run until stopped (monitor, exporter,
// serve). The handler only sets the flag; each command polls it and stops from its own thread
// (stopping locks and joins threads, nothing a handler may do). sigwait would not do: CUDA's and
// OpenBLAS's threads may take the signal, and a shell starts background jobs with SIGINT
// ignored. No SA_RESTART: a signal interrupts a sleep, so Ctrl-C stops at once.
#pragma once

namespace rcuda::cli {

void catch_stop_signals();
bool stop_requested();

}  // namespace rcuda::cli
