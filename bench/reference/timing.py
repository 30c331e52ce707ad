"""The sample timing bench/reference/kernels.py and ops.py share, as the C++
benchmarks time: the median of 7 samples, a sample repeating the work until
it has taken 20 ms of `clock` (this thread's CPU time on one thread, the wall
clock on more)."""

import time

SAMPLES = 7
MINIMUM_SAMPLE_SECONDS = 0.02


def median_seconds(work, clock):
    """Seconds per call of work(): the median of SAMPLES samples."""
    calls = 1
    while True:
        start = clock()
        for _ in range(calls):
            work()
        seconds = clock() - start
        if seconds >= MINIMUM_SAMPLE_SECONDS:
            break
        calls *= 10 if seconds < MINIMUM_SAMPLE_SECONDS / 10 else 2
    samples = []
    for _ in range(SAMPLES):
        start = clock()
        for _ in range(calls):
            work()
        samples.append((clock() - start) / calls)
    return sorted(samples)[len(samples) // 2]


def sample_clock(threads):
    """This thread's CPU time on one thread (other processes' load does not
    count), the wall clock on more (the workers' time would not count)."""
    return time.thread_time if threads == 1 else time.perf_counter
