"""PyTorch's side of bench_ops: the same operations, timed the same way.

    /usr/bin/python3 bench/reference/ops.py [--threads N]

bench_ops runs this script between its own rounds and reads its last line:
one JSON object of microseconds per case, each name spelled exactly as
bench_ops spells it (a line per case, "name<TAB>microseconds", comes first,
for reading). Each figure is the median of 7 samples, a sample
repeating the work until it has taken 20 ms (this thread's CPU time on one
thread, the wall clock on more, as bench/timing.hpp does). OpenBLAS keeps a
thread count of its own, so OPENBLAS_NUM_THREADS is set before torch is
imported. Run it with Debian's /usr/bin/python3 and python3-torch with
libopenblas0-pthread installed: without OpenBLAS, Debian's torch multiplies
with the reference BLAS.

What each case does is said beside it; bench/bench_ops.cpp does the same
work through attograd's public ops.
"""

import json
import sys

from arguments import parse
from timing import median_seconds, sample_clock


def cases(torch):
    """(name, work): the names bench_ops prints, in its order."""
    nn, functional = torch.nn, torch.nn.functional
    result = []

    for n in (256, 512, 1024):  # matmul of two squares, no autograd
        a, b = torch.rand(n, n) * 2 - 1, torch.rand(n, n) * 2 - 1
        result.append((f"matmul {n}^3", lambda a=a, b=b: torch.matmul(a, b)))

    a, b = torch.rand(64, 10, 256) * 2 - 1, torch.rand(64, 256, 10) * 2 - 1
    result.append(("bmm (64,10,256)@(64,256,10)", lambda: torch.bmm(a, b)))

    # A GRU over a sequence, forward and backward: every gradient formed
    # (the input's and all four parameters').
    gru = nn.GRU(256, 256)
    x = torch.randn(10, 64, 256, requires_grad=True)

    def gru_sequence():
        gru.zero_grad(set_to_none=True)
        x.grad = None
        output, _ = gru(x)
        output.sum().backward()

    result.append(("GRU fwd+bwd T10 B64 H256", gru_sequence))

    logits = torch.randn(640, 2297)
    result.append(("softmax rows (640,2297)", lambda: torch.softmax(logits, 1)))
    result.append(("log_softmax rows (640,2297)", lambda: torch.log_softmax(logits, 1)))

    weight, vector = torch.randn(2297, 256), torch.randn(256)
    result.append(("matvec (2297,256)@(256)", lambda: torch.mv(weight, vector)))

    # One decoder step at batch 1, as training runs it: parameters that
    # require gradients, so autograd records the step.
    cell = nn.GRUCell(256, 256)
    cell_x, cell_h = torch.randn(1, 256), torch.randn(1, 256)
    result.append(("GRUCell forward B1 H256", lambda: cell(cell_x, cell_h)))

    # The output layer of a decoder step and its loss, forward and backward,
    # every gradient formed.
    linear = nn.Linear(256, 2297)
    linear_x = torch.randn(1, 256, requires_grad=True)
    target = torch.tensor([7])

    def linear_log_softmax():
        linear.zero_grad(set_to_none=True)
        linear_x.grad = None
        loss = functional.nll_loss(torch.log_softmax(linear(linear_x), 1), target)
        loss.backward()

    result.append(("Linear(256,2297)+log_softmax fwd+bwd B1", linear_log_softmax))
    return result


def main():
    threads = parse(__doc__).threads  # sets OPENBLAS_NUM_THREADS before torch loads
    import torch  # pylint: disable=import-outside-toplevel

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    clock = sample_clock(threads)
    print(f"# PyTorch {torch.__version__}, {threads} thread(s)")
    micros = {}
    for name, work in cases(torch):
        grad_mode = torch.enable_grad() if "fwd+bwd" in name or "GRUCell" in name else torch.no_grad()
        with grad_mode:
            seconds = median_seconds(work, clock)
        micros[name] = seconds * 1e6
        print(f"{name}\t{micros[name]:.2f}")
        sys.stdout.flush()
    print(json.dumps(micros))


if __name__ == "__main__":
    main()
