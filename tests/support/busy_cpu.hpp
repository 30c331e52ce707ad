// tests/support/busy_cpu.hpp — another program taking a core, for the tests
// and benchmarks that measure or check threads under load.
//
// While a BusyCpu lives, a forked child process spins on the last CPU this
// process may use; it is killed and reaped when the BusyCpu ends. This
// process is not pinned: the scheduler places its threads as it would for
// a user.
#pragma once

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>

namespace attograd::testing {

class BusyCpu {
 public:
  BusyCpu() {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &allowed)) cpu_ = cpu;
    }
    child_ = fork();
    if (child_ == 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu_, &one);
      sched_setaffinity(0, sizeof one, &one);
      volatile uint64_t spins = 0;
      for (;;) spins = spins + 1;
    }
  }
  ~BusyCpu() {
    if (child_ > 0) {
      kill(child_, SIGKILL);
      waitpid(child_, nullptr, 0);
    }
  }
  BusyCpu(const BusyCpu&) = delete;
  BusyCpu& operator=(const BusyCpu&) = delete;

  // Whether the spinning child runs (false when affinity or fork failed).
  bool spinning() const { return child_ > 0; }
  // The CPU it spins on.
  int cpu() const { return cpu_; }

 private:
  pid_t child_ = -1;
  int cpu_ = -1;
};

}  // namespace attograd::testing
