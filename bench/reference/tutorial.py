"""The PyTorch tutorial "NLP From Scratch: Translation with a Sequence to
Sequence Network and Attention" in plain PyTorch: the anchor that
`translate train` (the tutorial recipe) and bench_seq2seq are compared with.

The model and the training step are the tutorial's code: EncoderRNN
(Embedding + GRU, H = 256, fed one word per call), AttnDecoderRNN (dropout
0.1 on the embedded word, attention weights softmax(Linear(2H -> MAX_LENGTH)
of [embedded; hidden]), bmm with the encoder outputs, attn_combine, ReLU,
GRU, Linear + log_softmax), NLLLoss summed over the decoder steps, SGD with
lr 0.01 on encoder and decoder, one pair per iteration, teacher forcing with
probability 0.5 (otherwise the decoder's argmax is fed back until EOS).

The data and the schedule are attograd's (models/text, models/translation):
its normalisation and the tutorial's filter (fewer than MAX_LENGTH = 10
words, English starting "i am ", "he is ", ...), French -> English, 8,547
pairs; the 5 % validation split by source sentence (split seed 1), 8,123
pairs left for training; vocabularies of the training split (SOS, EOS,
<unk>, then words by first appearance); and iteration i's pair and coin drawn
exactly as attograd's Trainer draws them (attograd_random.py). Initial weights
and dropout masks come from torch.manual_seed(--seed). What attograd computes
differently but to the same values (the encoder's GRU over the whole
sentence, the output layer once over all steps, sparse embedding gradients)
is left as the tutorial writes it.

Timed, on --threads N (OpenBLAS too; 1 by default):
  1. --iters training iterations: wall and CPU time of the loop only (the
     schedule is drawn before it), and the loss per target word averaged
     over them, the figure `translate train --iters N --json` reports as
     final_loss when N is at most its print interval (5,000);
  2. bench_seq2seq's fixed pair: V_in = 3,544, V_out = 2,231, 8 source and
     8 target ids (EOS included); an iteration is zero_grad, forward,
     backward and the SGD step; teacher forced, then greedy on a fresh model;
     5 warm-up iterations, then the median of 15 samples of 10 iterations.

Much of the time can be the kernel's rather than PyTorch's: each embedding
lookup's gradient is a dense (V, H) matrix of 2.3-3.6 MB (the tutorial's
nn.Embedding), glibc's malloc returns such blocks to the kernel and faults
them in again, and on a loaded machine those page faults (counted in CPU
time) can take most of an iteration. The script leaves malloc as it is;
MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 in the
environment keeps the blocks in the heap.

    nice -n 15 /usr/bin/python3 bench/reference/tutorial.py [--iters 2000] [--threads 1] [--seed 1]

prints one JSON line with every figure.
"""
import json
import math
import os
import statistics
import sys
import time
import unicodedata


from arguments import parse  # pylint: disable=wrong-import-order

# Before torch loads OpenBLAS, which reads OPENBLAS_NUM_THREADS then.
ARGS = parse(__doc__,
             ("--data", str, "data/eng-fra.tsv"),
             ("--iters", int, 2000),
             ("--seed", int, 1))
# pylint: disable=wrong-import-position
import torch
from torch.nn import functional as F

from attograd_random import MASK, Generator, shuffled_indices

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from torch_bridge import AttnDecoderRNN, EncoderRNN  # pylint: disable=import-error

SOS, EOS = 0, 1
MAX_LENGTH, HIDDEN = 10, 256
PREFIXES = ("i am ", "i m ", "he is ", "he s ", "she is ", "she s ",
            "you are ", "you re ", "we are ", "we re ", "they are ", "they re ")


# ---------------------------------------------------------------- data (models/text)

def normalize(sentence):
    """attograd's normalize_sentence: NFD without marks, a-z, a space before . ! ?,
    every other run of characters one space."""
    out, pending_space = "", False
    for char in sentence:
        for part in unicodedata.normalize("NFD", char):
            if unicodedata.category(part) == "Mn":
                continue
            if part in ".!?":
                out += " " + part if out else part
                pending_space = False
            elif part.isascii() and part.isalpha():
                out += " " + part.lower() if pending_space and out else part.lower()
                pending_space = False
            else:
                pending_space = True
    return out


def read_pairs(path):
    """(french, english) pairs of the file, both normalised, in file order."""
    pairs = []
    with open(path, encoding="utf-8-sig") as f:
        for line in f.read().split("\n"):
            english, tab, rest = line.rstrip("\r").partition("\t")
            if not tab:
                continue
            english, french = normalize(english), normalize(rest.split("\t")[0])
            if english and french:
                pairs.append((french, english))
    return pairs


def keep(french, english):
    return (len(french.split()) < MAX_LENGTH and len(english.split()) < MAX_LENGTH
            and english.startswith(PREFIXES))


def training_split(pairs, fraction=0.05, seed=1):
    """split_by_source: the pairs whose source sentence is not held out."""
    group = {}
    for source, _ in pairs:
        group.setdefault(source, len(group))
    held_out = math.floor(fraction * len(group) + 0.5)
    if fraction > 0 and len(group) >= 2:
        held_out = min(max(held_out, 1), len(group) - 1)
    validation = set(shuffled_indices(len(group), Generator(seed))[:held_out])
    return [pair for pair in pairs if group[pair[0]] not in validation]


def vocabulary(sentences):
    index = {"SOS": SOS, "EOS": EOS, "<unk>": 2}
    for sentence in sentences:
        for word in sentence.split():
            index.setdefault(word, len(index))
    return index


def ids(vocab, sentence):
    """The tutorial's tensorFromSentence: (S, 1), EOS last."""
    return torch.tensor([vocab[word] for word in sentence.split()] + [EOS]).view(-1, 1)


def mix(value):
    """SplitMix64's finaliser, as models/seq2seq/training.cpp."""
    value = (value + 0x9E3779B97F4A7C15) & MASK
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & MASK
    return value ^ (value >> 31)


def schedule(seed, iterations, pair_count, teacher_forcing=0.5):
    """(pair index, teacher forced) of iterations 1 … N, as Trainer::train_iteration draws them."""
    plan = []
    for iteration in range(1, iterations + 1):
        generator = Generator(mix(mix(seed) ^ iteration))
        plan.append((generator.below(pair_count), generator.uniform() < teacher_forcing))
    return plan


# ---------------------------------------------------------------- the tutorial's step
# EncoderRNN and AttnDecoderRNN are scripts/torch_bridge.py's, the modules an
# attograd checkpoint loads into.

def train(source, target, encoder, decoder, optimizers, teacher_forcing):
    """The tutorial's train() for one pair: (loss per target word, decoder steps taken)."""
    for optimizer in optimizers:
        optimizer.zero_grad()
    hidden = torch.zeros(1, 1, HIDDEN)
    encoder_outputs = torch.zeros(MAX_LENGTH, HIDDEN)
    for i in range(source.size(0)):
        output, hidden = encoder(source[i], hidden)
        encoder_outputs[i] = output[0, 0]
    word, loss, steps = torch.tensor([[SOS]]), 0, 0
    for t in range(target.size(0)):
        log_probs, hidden, _ = decoder(word, hidden, encoder_outputs, source.size(0))
        loss += F.nll_loss(log_probs, target[t])
        steps += 1
        if teacher_forcing:
            word = target[t]
        else:
            word = log_probs.topk(1)[1].squeeze().detach()
            if word.item() == EOS:
                break
    loss.backward()
    for optimizer in optimizers:
        optimizer.step()
    return loss.item() / target.size(0), steps


def sgd(encoder, decoder):
    return [torch.optim.SGD(encoder.parameters(), lr=0.01),
            torch.optim.SGD(decoder.parameters(), lr=0.01)]


# ---------------------------------------------------------------- timing

def fixed_pair(teacher_forcing):
    """bench_seq2seq's pair: ms per iteration (CPU and wall medians) and mean decoder steps."""
    torch.manual_seed(ARGS.seed)
    encoder, decoder = EncoderRNN(3544, HIDDEN), AttnDecoderRNN(HIDDEN, 2231)
    optimizers = sgd(encoder, decoder)
    source = torch.tensor([14, 215, 3, 98, 1203, 7, 5, EOS]).view(-1, 1)
    target = torch.tensor([22, 9, 301, 47, 1500, 6, 3, EOS]).view(-1, 1)
    for _ in range(5):
        train(source, target, encoder, decoder, optimizers, teacher_forcing)
    cpu, wall, steps = [], [], []
    for _ in range(15):
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(10):
            steps.append(train(source, target, encoder, decoder, optimizers, teacher_forcing)[1])
        cpu.append(100 * (time.process_time() - cpu_start))  # ms per iteration: 1000 / 10
        wall.append(100 * (time.perf_counter() - start))
    return statistics.median(cpu), statistics.median(wall), statistics.mean(steps)


def main():
    torch.set_num_threads(ARGS.threads)
    torch.manual_seed(ARGS.seed)
    pairs = [pair for pair in read_pairs(ARGS.data) if keep(*pair)]
    training = training_split(pairs)
    source_vocab = vocabulary(source for source, _ in training)
    target_vocab = vocabulary(target for _, target in training)
    encoded = [(ids(source_vocab, s), ids(target_vocab, t)) for s, t in training]
    encoder = EncoderRNN(len(source_vocab), HIDDEN)
    decoder = AttnDecoderRNN(HIDDEN, len(target_vocab))
    optimizers = sgd(encoder, decoder)
    plan = schedule(ARGS.seed, ARGS.iters, len(encoded))

    start, cpu_start = time.perf_counter(), time.process_time()
    loss_sum = 0.0
    for index, teacher_forcing in plan:
        loss_sum += train(*encoded[index], encoder, decoder, optimizers, teacher_forcing)[0]
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start

    forced_cpu, forced_wall, _ = fixed_pair(True)
    greedy_cpu, greedy_wall, greedy_steps = fixed_pair(False)
    print(json.dumps({
        "pairs": len(pairs), "train_pairs": len(training),
        "source_vocabulary": len(source_vocab), "target_vocabulary": len(target_vocab),
        "iterations": ARGS.iters, "teacher_forced_iterations": sum(f for _, f in plan),
        "average_loss": loss_sum / ARGS.iters,
        "ms_per_iteration_wall": 1000 * seconds / ARGS.iters,
        "ms_per_iteration_cpu": 1000 * cpu_seconds / ARGS.iters,
        "fixed_pair_teacher_forced_ms_per_iteration_cpu": forced_cpu,
        "fixed_pair_teacher_forced_ms_per_iteration_wall": forced_wall,
        "fixed_pair_greedy_ms_per_iteration_cpu": greedy_cpu,
        "fixed_pair_greedy_ms_per_iteration_wall": greedy_wall,
        "fixed_pair_greedy_decoder_steps": greedy_steps,
        "seed": ARGS.seed, "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
