"""The PyTorch side of tests/nn/test_torch_optim.cpp, in double, one thread.

Reads a problem as JSON (argv[1]), writes the answer as JSON (argv[2]):
  kind "adamw": torch.optim.AdamW over named parameters in two groups (the
    second with weight decay 0), fed the gradients the test gives for each
    step; the answer holds every parameter after every step.
  kind "gelu": torch.nn.functional.gelu(x, approximate="tanh"), its
    gradient against a weight w (d/dx of sum(w * gelu(x))) and the gradient
    of that gradient against a second weight u (d/dx of sum(u * grad)).
"""
import json
import sys

import torch


def tensor(entry):
    return torch.tensor(entry["values"], dtype=torch.float64).reshape(entry["shape"])


def flat(t):
    return t.detach().reshape(-1).tolist()


def adamw(problem):
    named = {entry["name"]: tensor(entry).requires_grad_() for entry in problem["parameters"]}
    groups = [{"params": [named[name] for name in group["names"]],
               "weight_decay": group["weight_decay"]} for group in problem["groups"]]
    optimizer = torch.optim.AdamW(groups, lr=problem["lr"], betas=tuple(problem["betas"]),
                                  eps=problem["eps"])
    steps = []
    for gradients in problem["gradients"]:
        for entry in gradients:
            named[entry["name"]].grad = tensor(entry)
        optimizer.step()
        steps.append({name: flat(p) for name, p in named.items()})
    return {"steps": steps}


def gelu(problem):
    x = tensor(problem["x"]).requires_grad_()
    w, u = tensor(problem["w"]), tensor(problem["u"])
    y = torch.nn.functional.gelu(x, approximate="tanh")
    (dx,) = torch.autograd.grad((w * y).sum(), x, create_graph=True)
    (ddx,) = torch.autograd.grad((u * dx).sum(), x)
    return {"y": flat(y), "dx": flat(dx), "ddx": flat(ddx)}


def main():
    torch.set_num_threads(1)
    with open(sys.argv[1]) as f:
        problem = json.load(f)
    answer = {"adamw": adamw, "gelu": gelu}[problem["kind"]](problem)
    with open(sys.argv[2], "w") as f:
        json.dump(answer, f)


if __name__ == "__main__":
    main()
