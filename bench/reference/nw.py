"""d2l.ai v0.17's "Attention Pooling: Nadaraya–Watson Kernel Regression"
(§10.2), its learned attention pooling, in plain PyTorch: the anchor for
bench_nw_regression (and `nw_regression`'s train_ms).

The model and the loop are d2l's: NWKernelRegression scores each key by
-((query - key) * w)^2 / 2, softmax over the keys, bmm with the values; each
training input is a query over the other 49 training pairs (keys and values
built once with the (1 - eye(n)) mask), MSELoss(reduction='none') summed,
SGD with lr 0.5. As attograd runs it (models/nw_regression/nw_regression.cpp,
bench/bench_nw_regression.cpp): 100 epochs (d2l shows 5); --w vector gives w
one entry per key slot (49), as `nw_regression --w vector`; and the data and
the initial w are attograd's seed-0 draws (make_dataset: 50 x uniform on
[0, 5), sorted, y = 2 sin x + x^0.8 + N(0, 0.5^2); then w uniform on [0, 1)),
reproduced with attograd_random.py, so the final loss and w can be compared
with bench_nw_regression's "check" line. attograd forms -(x - k)^2 / 2 once
and scales it by w^2 each epoch; here the forward is d2l's, whole, each epoch.

Timed as bench_nw_regression times attograd: a training is 100 epochs
(zero_grad, forward, backward, SGD step, reading the loss) from the same
initial w; the CPU time of the epochs (wall time too), the median over
--trainings trainings.

    nice -n 15 /usr/bin/python3 bench/reference/nw.py [--w scalar|vector] [--trainings 301] [--threads 1]

prints one JSON line: the medians, the last epoch's loss (taken before its
step, as attograd reports it) and the learned w.
"""
import json
import statistics
import time


from arguments import parse  # pylint: disable=wrong-import-order

# Before torch loads OpenBLAS, which reads OPENBLAS_NUM_THREADS then.
ARGS = parse(__doc__,
             ("--w", str, "scalar"),
             ("--trainings", int, 301),
             ("--epochs", int, 100),
             ("--seed", int, 0))
if ARGS.w not in ("scalar", "vector"):
    raise SystemExit(f"nw.py: --w {ARGS.w}: give scalar or vector")
# pylint: disable=wrong-import-position
import torch
from torch import nn

from attograd_random import Generator

N = 50


class NWKernelRegression(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w = nn.Parameter(w.clone())

    def forward(self, queries, keys, values):
        queries = queries.repeat_interleave(keys.shape[1]).reshape((-1, keys.shape[1]))
        self.attention_weights = nn.functional.softmax(-((queries - keys) * self.w) ** 2 / 2, dim=1)
        return torch.bmm(self.attention_weights.unsqueeze(1), values.unsqueeze(-1)).reshape(-1)


def main():
    torch.set_num_threads(ARGS.threads)
    generator = Generator(ARGS.seed)
    x_train, _ = torch.sort(torch.tensor([generator.uniform() for _ in range(N)]) * 5)
    noise = torch.tensor([generator.normal(0.0, 0.5) for _ in range(N)])
    y_train = 2 * torch.sin(x_train) + x_train ** 0.8 + noise
    w_start = torch.tensor([generator.uniform() for _ in range(1 if ARGS.w == "scalar" else N - 1)])

    others = (1 - torch.eye(N)).type(torch.bool)
    keys = x_train.repeat((N, 1))[others].reshape((N, -1))
    values = y_train.repeat((N, 1))[others].reshape((N, -1))
    net = NWKernelRegression(w_start)
    loss = nn.MSELoss(reduction="none")

    cpu_ms, wall_ms = [], []
    for _ in range(ARGS.trainings):
        with torch.no_grad():
            net.w.copy_(w_start)
        net.w.grad = None
        trainer = torch.optim.SGD(net.parameters(), lr=0.5)
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(ARGS.epochs):
            trainer.zero_grad()
            l = loss(net(x_train, keys, values), y_train).sum()
            l.backward()
            trainer.step()
            final_loss = float(l)
        cpu_ms.append(1000 * (time.process_time() - cpu_start))
        wall_ms.append(1000 * (time.perf_counter() - start))

    cpu = statistics.median(cpu_ms)
    print(json.dumps({
        "w_shape": ARGS.w, "trainings": ARGS.trainings, "epochs": ARGS.epochs,
        "ms_per_training_cpu": cpu, "us_per_epoch_cpu": 1000 * cpu / ARGS.epochs,
        "ms_per_training_wall": statistics.median(wall_ms),
        "final_loss": final_loss, "w": net.w.tolist(), "w_start": w_start.tolist(),
        "seed": ARGS.seed, "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
