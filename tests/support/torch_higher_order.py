#!/usr/bin/env python3
"""Second derivatives in PyTorch, in double, of the functions that
tests/models/test_torch_higher_order.cpp differentiates twice in attograd.

  torch_higher_order.py IN.json OUT.json

IN.json holds the problem, as the test wrote it: "kind" ("mlp", "nw" or
"seq2seq"), the parameters as {"name", "shape", "values"} (row-major), the
data, and for "mlp" and "nw" a direction "v" in the same layout. OUT.json gets
the loss and, by parameter name, row-major values of

  mlp, nw    "hvp":  H v, from torch.autograd.functional.hvp
  seq2seq    "gradient": ∂L/∂θ, and "penalty_gradient": ∂/∂θ Σ_θ ‖∂L/∂θ‖²
             (torch.autograd.grad with create_graph=True, then again)

One thread, so the sums are the same on every run.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch_bridge  # noqa: E402
import torch_models  # noqa: E402


def tensor(entry):
    return torch.tensor(entry["values"], dtype=torch.float64).reshape(entry["shape"])


def flat(t):
    return t.detach().reshape(-1).tolist()


def mlp(problem):
    """x (N,D) -> Linear -> tanh -> Linear -> sigmoid -> Linear -> mean cross-entropy."""
    names = [entry["name"] for entry in problem["parameters"]]
    theta = tuple(tensor(entry) for entry in problem["parameters"])
    v = tuple(tensor(entry) for entry in problem["v"])
    x, labels = tensor(problem["x"]), torch.tensor(problem["labels"], dtype=torch.int64)

    def loss(*p):
        named = dict(zip(names, p))
        h = torch.tanh(F.linear(x, named["hidden1.weight"], named["hidden1.bias"]))
        h = torch.sigmoid(F.linear(h, named["hidden2.weight"], named["hidden2.bias"]))
        return F.cross_entropy(F.linear(h, named["out.weight"], named["out.bias"]), labels)

    value, hv = torch.autograd.functional.hvp(loss, theta, v)
    return {"loss": float(value), "hvp": {n: flat(t) for n, t in zip(names, hv)}}


def nw(problem):
    """The seed's NW training loss: Σᵢ (Σⱼ αᵢⱼ vᵢⱼ − yᵢ)², α = softmax_j(−((xᵢ − kᵢⱼ)·w)²/2)."""
    (entry,) = problem["parameters"]
    w, v = tensor(entry), tensor(problem["v"][0])
    x, y = tensor(problem["x"]), tensor(problem["y"])
    keys, values = tensor(problem["keys"]), tensor(problem["values"])

    def loss(w):
        scores = -((x.unsqueeze(1) - keys) * w) ** 2 / 2
        predictions = (torch.softmax(scores, dim=1) * values).sum(dim=1)
        return ((predictions - y) ** 2).sum()

    value, hv = torch.autograd.functional.hvp(loss, w, v)
    return {"loss": float(value), "hvp": {entry["name"]: flat(hv)}}


def seq2seq(problem):
    """The tutorial's step on one pair with teacher forcing: L = Σ_t −log p(target_t)."""
    hidden_size, max_length = problem["hidden_size"], problem["max_length"]
    kind = problem["decoder"]
    encoder = torch_models.EncoderRNN(problem["source_vocabulary"], hidden_size).double()
    if kind == "location":
        decoder = torch_models.AttnDecoderRNN(hidden_size, problem["target_vocabulary"], 0.0,
                                              max_length).double()
    else:
        decoder = torch_models.BahdanauAttnDecoderRNN(hidden_size, problem["target_vocabulary"],
                                                      0.0).double()
    modules = {"encoder": (encoder, torch_bridge.ENCODER_NAMES),
               "decoder": (decoder, torch_bridge.decoder_names(kind))}
    given = {entry["name"]: tensor(entry) for entry in problem["parameters"]}
    theta = {}  # attograd name -> the torch module's parameter
    for part, (module, names) in modules.items():
        state = dict(module.named_parameters())
        for ours, theirs in names.items():
            with torch.no_grad():
                state[theirs].copy_(given[f"{part}.{ours}"])
            theta[f"{part}.{ours}"] = state[theirs]
    if kind == "bahdanau":
        # attograd's additive attention has no biases: zero constants here.
        for bias in torch_bridge.BAHDANAU_BIASES:
            parameter = dict(decoder.named_parameters())[bias]
            with torch.no_grad():
                parameter.zero_()
            parameter.requires_grad_(False)
    if sorted(theta) != sorted(given):
        raise SystemExit(f"error: parameters {sorted(given)} do not map onto {sorted(theta)}")

    source, target = problem["source"], problem["target"]
    hidden = torch.zeros(1, 1, hidden_size, dtype=torch.float64)
    outputs = torch.zeros(max_length, hidden_size, dtype=torch.float64)
    for position, word in enumerate(source):
        output, hidden = encoder(torch.tensor([word]), hidden)
        outputs = outputs.index_put((torch.tensor([position]),), output[0])
    loss, word = 0, torch_bridge.SOS
    for expected in target:
        log_probs, hidden, _ = decoder(torch.tensor([word]), hidden, outputs, len(source))
        loss = loss + F.nll_loss(log_probs, torch.tensor([expected]))
        word = expected

    names = sorted(theta)
    gradients = torch.autograd.grad(loss, [theta[n] for n in names], create_graph=True)
    penalty = sum((g * g).sum() for g in gradients)
    penalty_gradients = torch.autograd.grad(penalty, [theta[n] for n in names])
    return {"loss": float(loss), "penalty": float(penalty),
            "gradient": {n: flat(g) for n, g in zip(names, gradients)},
            "penalty_gradient": {n: flat(g) for n, g in zip(names, penalty_gradients)}}


def main(source, out):
    torch.set_num_threads(1)
    with open(source) as f:
        problem = json.load(f)
    result = {"mlp": mlp, "nw": nw, "seq2seq": seq2seq}[problem["kind"]](problem)
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
