#include "stop_signal.h"

#include <csignal>

namespace rcuda::cli {
namespace {
volatile std::sig_atomic_t stop_flag = 0;
void on_stop_signal(int) { stop_flag = 1; }
}  // namespace

void catch_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool stop_requested() { return stop_flag != 0; }

}  // namespace rcuda::cli
