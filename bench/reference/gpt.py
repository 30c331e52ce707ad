"""nanoGPT's character GPT and its CPU recipe in plain PyTorch, one thread: the
anchor that `gpt train` (examples/gpt/gpt_commands.cpp) is compared with.

The model is nanoGPT's model.py at bias=False, dropout 0: the same parameter
names (transformer.wte, wpe, h.N.ln_1, attn.c_attn, attn.c_proj, ln_2,
mlp.c_fc, mlp.c_proj, ln_f, and lm_head tied to wte), LayerNorm with a weight
and no bias, GELU in its tanh form, and its initialisation: every Linear and
Embedding normal(0, 0.02), the two projections into the residual stream
normal(0, 0.02 / sqrt(2 * layers)). Attention is the composed masked softmax
(nanoGPT's path without flash attention; PyTorch 1.13 has no
scaled_dot_product_attention). The weights come from torch's generator,
seeded with --seed; everything else follows attograd's recipe:

- the text: the French column of data/eng-fra.tsv, lines joined with '\\n'
  (or --data read whole), characters = code points, the vocabulary sorted,
  the first 90 % to train on and the rest to validate;
- the batches: attograd's random_batch, drawn from attograd's own generator
  (attograd_random.py) seeded with seed * 1000003 + iteration, so both
  programs see the same windows in the same order;
- nanoGPT's get_lr (warm-up, cosine to --min-lr at --decay-iters), AdamW
  with β 0.9/0.99, eps 1e-8 and weight decay on the ≥2-D parameters only,
  gradients clipped at norm --grad-clip;
- the validation loss: the mean cross-entropy over consecutive windows of
  the validation text, the first 256 windows on a progress line and every
  window at the end.

    /usr/bin/python3 bench/reference/gpt.py [--iters 2000] [--batch 12] [--block 64]
        [--layers 4] [--heads 4] [--embd 128] [--seed 1337] [--data FILE] [--threads 1]

Only the training iterations after the first 10 are timed (wall clock), as
`gpt train` times them; drawing a batch's offsets with the pure-Python twin
of attograd's generator happens before the clock starts (it is an artefact
of matching attograd's batches, not PyTorch's work), cutting the windows out
of the text is timed. Prints a progress line every --eval-every iterations
and ends with one JSON line like `gpt train --json`'s: iterations,
train_loss, val_loss, tokens_per_second, parameters.
"""
import json
import math
import time

from arguments import parse  # pylint: disable=wrong-import-order

# Before torch loads OpenBLAS, which reads OPENBLAS_NUM_THREADS then.
ARGS = parse(__doc__,
             ("--data", str, ""),
             ("--iters", int, 2000),
             ("--batch", int, 12),
             ("--block", int, 64),
             ("--layers", int, 4),
             ("--heads", int, 4),
             ("--embd", int, 128),
             ("--lr", float, 1e-3),
             ("--min-lr", float, 1e-4),
             ("--warmup", int, 100),
             ("--decay-iters", int, 0),
             ("--weight-decay", float, 0.1),
             ("--grad-clip", float, 1.0),
             ("--eval-every", int, 250),
             ("--seed", int, 1337))
# pylint: disable=wrong-import-position
import torch
from torch import nn
from torch.nn import functional as F

from attograd_random import Generator

DEFAULT_DATA, DEFAULT_COLUMN = "data/eng-fra.tsv", 1  # the French side
EVAL_BATCH, PROGRESS_WINDOWS, TIMING_WARMUP = 64, 256, 10
BATCH_SEED_STRIDE = 1000003


# ---------------------------------------------------------------- data (models/gpt/char_data.cpp)

def column_of(text, column):
    """Field `column` (0-based) of every non-empty line that has it, each
    followed by '\\n'."""
    out = []
    for line in text.split("\n"):
        if line.endswith("\r"):
            line = line[:-1]
        fields = line.split("\t")
        if line and len(fields) > column:
            out.append(fields[column] + "\n")
    return "".join(out)


def load_text(path, column):
    with open(path, encoding="utf-8") as file:
        text = file.read()
    return column_of(text, column) if column >= 0 else text


def random_batch(ids, batch, block, seed):
    """The windows' offsets: attograd's random_batch."""
    generator = Generator(seed)
    return [int(generator.uniform() * (len(ids) - block)) for _ in range(batch)]


def window_offsets(size, block):
    return list(range(0, size - block, block))


# ---------------------------------------------------------------- model (nanoGPT's model.py)

class LayerNorm(nn.Module):
    """A weight and no bias (PyTorch 1.13's nn.LayerNorm has no bias=False)."""

    def __init__(self, width):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, None, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, embd, heads, block):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(embd, 3 * embd, bias=False)
        self.c_proj = nn.Linear(embd, embd, bias=False)
        self.register_buffer("mask", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)  # (B, h, T, dh)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, embd):
        super().__init__()
        self.c_fc = nn.Linear(embd, 4 * embd, bias=False)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * embd, embd, bias=False)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, embd, heads, block):
        super().__init__()
        self.ln_1 = LayerNorm(embd)
        self.attn = CausalSelfAttention(embd, heads, block)
        self.ln_2 = LayerNorm(embd)
        self.mlp = MLP(embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab, block, layers, heads, embd):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, embd),
            wpe=nn.Embedding(block, embd),
            h=nn.ModuleList([Block(embd, heads, block) for _ in range(layers)]),
            ln_f=LayerNorm(embd)))
        self.lm_head = nn.Linear(embd, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * layers))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def loss(self, idx, targets):
        B, T = idx.size()
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(T))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


# ---------------------------------------------------------------- the recipe (nanoGPT's train.py)

def learning_rate(it):
    """nanoGPT's get_lr, as examples/gpt's learning_rate."""
    if it < ARGS.warmup:
        return ARGS.lr * (it + 1) / (ARGS.warmup + 1)
    end = ARGS.decay_iters if ARGS.decay_iters > 0 else ARGS.iters
    if it >= end:
        return ARGS.min_lr
    progress = (it - ARGS.warmup) / max(1, end - ARGS.warmup)
    return ARGS.min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (ARGS.lr - ARGS.min_lr)


def windows(ids, offsets, block):
    x = torch.stack([ids[o:o + block] for o in offsets])
    y = torch.stack([ids[o + 1:o + 1 + block] for o in offsets])
    return x, y


@torch.no_grad()
def validation_loss(model, ids, block, limit):
    model.eval()
    offsets = window_offsets(len(ids), block)
    if limit >= 0:
        offsets = offsets[:limit]
    total = 0.0
    for first in range(0, len(offsets), EVAL_BATCH):
        chosen = offsets[first:first + EVAL_BATCH]
        x, y = windows(ids, chosen, block)
        total += float(model.loss(x, y)) * len(chosen)
    model.train()
    return total / len(offsets)


def main():
    torch.set_num_threads(ARGS.threads)
    torch.manual_seed(ARGS.seed)
    text = load_text(ARGS.data or DEFAULT_DATA, -1 if ARGS.data else DEFAULT_COLUMN)
    vocabulary = sorted(set(text))
    index = {c: i for i, c in enumerate(vocabulary)}
    ids = torch.tensor([index[c] for c in text], dtype=torch.long)
    n = int(0.9 * len(ids))
    train, validation = ids[:n], ids[n:]
    model = GPT(len(vocabulary), ARGS.block, ARGS.layers, ARGS.heads, ARGS.embd)
    parameters = list(model.parameters())  # the tied table once
    optimizer = torch.optim.AdamW(
        [{"params": [p for p in parameters if p.dim() >= 2], "weight_decay": ARGS.weight_decay},
         {"params": [p for p in parameters if p.dim() < 2], "weight_decay": 0.0}],
        lr=ARGS.lr, betas=(0.9, 0.99), eps=1e-8)
    parameter_count = sum(p.numel() for p in parameters)
    print(f"gpt.py: {len(ids)} characters ({len(train)} train, {len(validation)} validation), "
          f"vocabulary {len(vocabulary)}; {parameter_count} parameters; {ARGS.iters} iterations "
          f"of {ARGS.batch} x {ARGS.block}", flush=True)

    timed_seconds, timed_iterations = 0.0, 0
    window_loss, window_count = 0.0, 0
    train_loss = val_loss = float("nan")
    model.train()
    for it in range(ARGS.iters):
        offsets = random_batch(train, ARGS.batch, ARGS.block, ARGS.seed * BATCH_SEED_STRIDE + it)
        began = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(it)
        x, y = windows(train, offsets, ARGS.block)
        optimizer.zero_grad(set_to_none=True)
        loss = model.loss(x, y)
        loss.backward()
        if ARGS.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(parameters, ARGS.grad_clip)
        optimizer.step()
        value = loss.item()
        if it >= TIMING_WARMUP:
            timed_seconds += time.perf_counter() - began
            timed_iterations += 1
        window_loss += value
        window_count += 1
        last = it + 1 == ARGS.iters
        if (it + 1) % ARGS.eval_every == 0 or last:
            train_loss = window_loss / window_count
            val_loss = validation_loss(model, validation, ARGS.block,
                                       -1 if last else PROGRESS_WINDOWS)
            tokens_per_second = (timed_iterations * ARGS.batch * ARGS.block / timed_seconds
                                 if timed_iterations else 0.0)
            print(f"iter {it + 1:6d}: train loss {train_loss:.4f}, val loss {val_loss:.4f}"
                  f"{'' if last else ' (first 256 windows)'}, lr {learning_rate(it):.2e}, "
                  f"{tokens_per_second:.0f} tokens/s", flush=True)
            window_loss, window_count = 0.0, 0
    print(json.dumps({"iterations": ARGS.iters, "train_loss": train_loss, "val_loss": val_loss,
                      "tokens_per_second": (timed_iterations * ARGS.batch * ARGS.block
                                            / timed_seconds if timed_iterations else 0.0),
                      "parameters": parameter_count, "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
