"""PyTorch's side of bench_kernels' matmul tables: the same products, timed the same way.

    /usr/bin/python3 bench/reference/kernels.py [--threads N]

One thread by default (torch.set_num_threads(1)), as the benchmark's table 2;
--threads 2 for table 2b. Each figure is the median of 7 samples, a sample
repeating the product until it has taken 20 ms (thread CPU time on one
thread, the wall clock on more, as bench/timing.hpp does). OpenBLAS keeps a
thread count of its own, so OPENBLAS_NUM_THREADS is set to the same number
before torch is imported: with its workers running, the one-thread clock
would not see their time. Operands are laid
out as the attograd row names them: "(768 x 256)T" is a (768, 256) tensor
multiplied transposed, a view, no copy.
"""

from arguments import parse
from timing import median_seconds, sample_clock


def cases():
    """(name, batches, M, K, N, a transposed, b transposed), as bench_kernels' table 2."""
    square = [(f"{n} x {n} @ {n} x {n} (NN)", 1, n, n, n, False, False)
              for n in (64, 128, 256, 512, 1024)]
    return square + [
        ("256 x 256 @ (256 x 256)T (NT)", 1, 256, 256, 256, False, True),
        ("(256 x 256)T @ 256 x 256 (TN)", 1, 256, 256, 256, True, False),
        ("1 x 256 @ (768 x 256)T (NT, GRU gates)", 1, 1, 256, 768, False, True),
        ("1 x 256 @ (2803 x 256)T (NT, output layer)", 1, 1, 256, 2803, False, True),
        ("64 x 256 @ (768 x 256)T (NT, batch 64)", 1, 64, 256, 768, False, True),
        ("(768 x 64)T @ 64 x 256 (TN, dW batch 64)", 1, 768, 64, 256, True, False),
        ("640 x 256 @ (2297 x 256)T (NT, T 10 B 64)", 1, 640, 256, 2297, False, True),
        ("bmm 64 x (10 x 256 @ 256 x 10) (NN)", 64, 10, 256, 10, False, False),
    ]


def operand(torch, batches, rows, cols, transposed):
    """A (rows, cols) operand (batched when batches > 1), stored transposed if asked."""
    if transposed:
        stored = torch.rand(batches, cols, rows) * 2 - 1
        view = stored.transpose(1, 2)
    else:
        view = torch.rand(batches, rows, cols) * 2 - 1
    return view if batches > 1 else view[0]


def main():
    threads = parse(__doc__).threads  # sets OPENBLAS_NUM_THREADS before torch loads
    import torch  # pylint: disable=import-outside-toplevel

    torch.set_num_threads(threads)
    clock = sample_clock(threads)
    print(f"PyTorch {torch.__version__}, {threads} thread(s) (torch and OpenBLAS)")
    print(f"{'shape (layout)':<44} {'GFLOP/s':>10} {'us':>12}")
    torch.manual_seed(0)
    with torch.no_grad():
        for name, batches, m, k, n, a_t, b_t in cases():
            if threads > 1 and m == 1:
                continue
            a = operand(torch, batches, m, k, a_t)
            b = operand(torch, batches, k, n, b_t)
            product = (lambda: torch.bmm(a, b)) if batches > 1 else (lambda: torch.matmul(a, b))
            seconds = median_seconds(product, clock)
            flops = 2.0 * batches * m * k * n
            print(f"{name:<44} {flops / seconds * 1e-9:>10.1f} {seconds * 1e6:>12.1f}")


if __name__ == "__main__":
    main()
