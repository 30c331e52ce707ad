#include "examples/common/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>

namespace attograd::cli {

namespace {

// The signal that asked the run to stop (0: none yet). The handler writes it
// and nothing else; the training loop reads it between steps.
volatile std::sig_atomic_t received = 0;

extern "C" void on_stop_signal(int signo) {
  // A second signal: the save in progress writes temporaries only, so ending
  // here leaves the last good files. _exit is async-signal-safe; exit is not.
  if (received != 0) ::_exit(128 + signo);
  received = signo;
}

struct sigaction previous_interrupt {};
struct sigaction previous_terminate {};

// ATTOGRAD_TEST_INTERRUPT="<INT|TERM>@<N>[,again]" (see the header).
struct TestInterrupt {
  int signo = 0;  // 0: the variable is not set (or not understood)
  int64_t after_step = 0;
  bool again = false;
};

TestInterrupt test_interrupt() {
  TestInterrupt test;
  const char* value = std::getenv("ATTOGRAD_TEST_INTERRUPT");
  if (value == nullptr) return test;
  const std::string text = value;
  const size_t at = text.find('@');
  if (at == std::string::npos) return test;
  const std::string name = text.substr(0, at);
  const size_t comma = text.find(',', at);
  const std::string count =
      text.substr(at + 1, comma == std::string::npos ? std::string::npos : comma - at - 1);
  if (count.empty() || count.size() > 9 ||
      count.find_first_not_of("0123456789") != std::string::npos)
    return test;
  test.after_step = std::stoll(count);
  test.again = comma != std::string::npos && text.substr(comma + 1) == "again";
  test.signo = name == "INT" ? SIGINT : name == "TERM" ? SIGTERM : 0;
  return test;
}

}  // namespace

InterruptGuard::InterruptGuard() {
  received = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, &previous_interrupt);
  sigaction(SIGTERM, &action, &previous_terminate);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &previous_interrupt, nullptr);
  sigaction(SIGTERM, &previous_terminate, nullptr);
}

bool InterruptGuard::stop_requested() {
  static const TestInterrupt test = test_interrupt();
  if (test.signo != 0 && boundaries_ == test.after_step) std::raise(test.signo);
  ++boundaries_;
  return requested();
}

bool InterruptGuard::requested() const { return received != 0; }

int InterruptGuard::signal() const { return received; }

int InterruptGuard::exit_status() const { return 128 + signal(); }

std::string InterruptGuard::what() const {
  return signal() == SIGINT ? "SIGINT" : signal() == SIGTERM ? "SIGTERM" : "no signal";
}

void InterruptGuard::during_save() const {
  static const TestInterrupt test = test_interrupt();
  if (test.signo != 0 && test.again && requested()) std::raise(test.signo);
}

}  // namespace attograd::cli
