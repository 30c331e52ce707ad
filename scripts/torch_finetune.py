#!/usr/bin/env python3
"""Fine-tune an exported translation model with PyTorch's DistributedDataParallel.

  torch_finetune.py IN.pt OUT.pt [--nproc N] [--steps K] [--batch B] [--lr LR]
                    [--data PATH] [--num-examples N] [--seed S] [--report FILE]

IN.pt is a bundle of `torch_bridge.py to-torch` for the batched or the
Transformer recipe; OUT.pt is the same bundle with the fine-tuned weights,
which `torch_bridge.py from-torch` turns back into a checkpoint for
`translate translate` and `translate eval` (docs/pytorch.md walks through it).

The run: N processes on this machine (torch.multiprocessing), joined by the
gloo backend over TCP on 127.0.0.1 and a free port. Every process builds the
model from IN.pt; each step, every process takes its own share of one batch of
pairs (the same shuffled order in all of them, its rank-th slice), computes
the masked cross-entropy of d2l's recipes (the padding after each target's
valid length ignored), and DDP averages the gradients, so all processes take
the same Adam step and keep the same weights. The pairs are read as the
recipes read them: d2l's normalisation, the first --num-examples pairs, the
checkpoint's direction, each sentence cut or padded to its num_steps.

Several machines: start the same command on each with --nnodes M,
--node-rank 0 … M−1 and --master-addr/--master-port naming node 0's address
(or MASTER_ADDR and MASTER_PORT). Under torchrun (which sets RANK,
WORLD_SIZE, MASTER_ADDR and MASTER_PORT), the script is one process of the
job and --nproc, --nnodes and --node-rank are torchrun's instead.

--report FILE writes one JSON line per step: {"step", "loss", "digests"},
"digests" holding each process's SHA-256 of its parameters after the step
(equal when the processes agree), and a last line {"loss_before",
"loss_after"}: the loss over all the pairs, dropout off, before and after.

Exits 2 on bad input (a missing or foreign bundle, a tutorial bundle, bad
flags, no pairs) with a one-line "error: ..." message, before any process starts.
"""
import argparse
import hashlib
import io
import json
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_bridge  # noqa: E402  (the bundle's checks, atomic writes)
from torch_bridge import BridgeError, shown  # noqa: E402

# PyTorch, imported once the command line and the paths have passed their
# checks (use_torch): importing it takes about 1.5 s.
torch = None
MAX_PROCESSES = 64
MAX_NODES = 1024


# --------------------------------------------------------------- data

def read_pairs(path, direction, num_examples):
    """The first `num_examples` pairs of a tab-separated file as (source words,
    target words), normalised as the recipes normalise (d2l's preprocess)."""
    data = torch_bridge.read_regular(path, "pairs file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BridgeError(f"{shown(path, 300)}: invalid UTF-8 at byte {error.start}; pass the "
                          "pairs file the model was trained on (data/eng-fra.tsv)") from None
    pairs = []
    for line in text.split("\n"):
        if len(pairs) == num_examples:
            break
        columns = line.rstrip("\r").split("\t")
        if len(columns) < 2:
            continue
        english, french = (torch_bridge.preprocess_d2l(column).split() for column in columns[:2])
        if english and french:
            pairs.append((english, french) if direction == "eng-fra" else (french, english))
    if not pairs:
        raise BridgeError(f"{shown(path, 300)}: no sentence pairs (lines 'English<TAB>French'); "
                          "pass the pairs file the model was trained on (data/eng-fra.tsv)")
    return pairs


def padded(sentences, words, num_steps):
    """d2l's build_array_nmt: ids, <eos>, cut or padded to num_steps -> (N,T) ids, (N) lengths."""
    index = {word: i for i, word in enumerate(words)}
    rows = []
    for sentence in sentences:
        ids = ([index.get(word, torch_bridge.UNK) for word in sentence]
               + [torch_bridge.BATCHED_EOS])[:num_steps]
        rows.append(ids + [torch_bridge.PAD] * (num_steps - len(ids)))
    array = torch.tensor(rows)
    return array, (array != torch_bridge.PAD).sum(dim=1)


def masked_loss(model, source, source_lens, target, target_lens):
    """Mean cross-entropy over the target ids before each row's valid length
    (teacher forcing: the decoder reads <bos> and the target shifted right)."""
    bos = torch.full((target.shape[0], 1), torch_bridge.BOS)
    logits = model(source, source_lens, torch.cat((bos, target[:, :-1]), dim=1))
    losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), target, reduction="none")
    keep = torch.arange(target.shape[1])[None, :] < target_lens[:, None]
    return (losses * keep).sum() / keep.sum()


def digest(model):
    """SHA-256 of every parameter's bytes, in state-dict order."""
    hasher = hashlib.sha256()
    for name, value in model.state_dict().items():
        hasher.update(name.encode())
        hasher.update(value.detach().contiguous().numpy().tobytes())
    return hasher.hexdigest()


def use_torch():
    global torch
    torch = torch_bridge.import_torch()


# --------------------------------------------------------------- one process

def worker(local_rank, job):
    """One process of the job: rank node_rank · nproc + local_rank of world_size."""
    use_torch()  # a spawned process imports this file afresh
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    torch.set_num_threads(1)
    if job["torchrun"]:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        dist.init_process_group("gloo", init_method="env://")
    else:
        rank, world = job["node_rank"] * job["nproc"] + local_rank, job["world_size"]
        dist.init_process_group("gloo", init_method=f"tcp://{job['addr']}:{job['port']}",
                                rank=rank, world_size=world)
    bundle, config = job["bundle"], job["config"]
    model = torch_bridge.recipe_model(bundle, config, job["source"]).train()
    torch.manual_seed(job["seed"] * 1000 + rank)  # each process its own dropout
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=job["lr"])
    source, source_lens, target, target_lens = job["arrays"]
    order = torch.Generator().manual_seed(job["seed"])  # the same batches in every process
    report = []
    if rank == 0:
        report.append(("before", full_loss(model, job["arrays"])))
    for step in range(1, job["steps"] + 1):
        batch = torch.randperm(source.shape[0], generator=order)[:job["batch"]]
        mine = batch[rank::world]
        if mine.numel() == 0:  # more processes than pairs in the batch
            mine = batch[:1]
        loss = masked_loss(ddp, source[mine], source_lens[mine], target[mine], target_lens[mine])
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        optimizer.step()
        digests = [None] * world
        dist.all_gather_object(digests, digest(model))
        losses = [None] * world
        dist.all_gather_object(losses, float(loss))
        if rank == 0:
            mean = sum(losses) / world
            report.append(("step", {"step": step, "loss": mean, "digests": digests}))
            print(f"step {step}/{job['steps']}: loss {mean:.4f}, "
                  f"{'weights agree' if len(set(digests)) == 1 else 'WEIGHTS DIFFER'} "
                  f"in {world} processes", flush=True)
    if rank == 0:
        report.append(("after", full_loss(model, job["arrays"])))
        finish(model, job, report)
    dist.barrier()  # rank 0 has written its files
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave without the destructors: tearing down DDP's reducer and the gloo
    # process group at exit can deadlock (the group's thread waits for the
    # GIL the destructor holds; seen with torch 1.13), so a finished run
    # would never end.
    os._exit(0)


def full_loss(model, arrays):
    """The loss over every pair, dropout off."""
    model.eval()
    with torch.no_grad():
        loss = float(masked_loss(model, *arrays))
    model.train()
    return loss


def finish(model, job, report):
    """Rank 0: the bundle with the fine-tuned weights, and the report."""
    before = report[0][1]
    after = report[-1][1]
    config = dict(job["config"])
    extra = dict(config.get("attograd", {}))
    metadata = dict(extra.get("metadata", {}))
    metadata["final_loss"] = repr(after)
    metadata["finetune"] = json.dumps({"steps": job["steps"], "processes": job["world_size"],
                                       "batch": job["batch"], "lr": job["lr"],
                                       "loss_before": before, "loss_after": after})
    extra["metadata"] = metadata
    config["attograd"] = extra
    bundle = {"encoder": model.encoder.state_dict(), "decoder": model.decoder.state_dict(),
              "source_words": job["bundle"]["source_words"],
              "target_words": job["bundle"]["target_words"], "config": json.dumps(config)}
    buffer = io.BytesIO()
    torch.save(bundle, buffer)
    torch_bridge.write_atomic(job["out"], buffer.getvalue())
    if job["report"]:
        lines = [json.dumps(entry) for kind, entry in report if kind == "step"]
        lines.append(json.dumps({"loss_before": before, "loss_after": after}))
        torch_bridge.write_atomic(job["report"], ("\n".join(lines) + "\n").encode())
    print(f"wrote {shown(job['out'], 300)}: loss over the {job['arrays'][0].shape[0]} pairs "
          f"{before:.4f} -> {after:.4f} after {job['steps']} steps on {job['world_size']} "
          "processes", flush=True)


# --------------------------------------------------------------- the command

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def prepare(arguments):
    """Every check before a process starts; the job every process gets."""
    bundle = torch_bridge.load_bundle(arguments.source)
    recipe, config = torch_bridge.bundle_recipe(bundle, arguments.source)
    if recipe not in torch_bridge.RECIPE_SIZES:
        raise BridgeError(f"{shown(arguments.source, 300)}: a {recipe}-recipe bundle; "
                          "torch_finetune.py fine-tunes the batched and transformer recipes "
                          "(train one with `translate train --recipe transformer`)")
    torch_bridge.check_recipe_config(config, arguments.source)
    for key in ("source_words", "target_words"):
        torch_bridge.check_words(bundle[key], key, arguments.source,
                                 torch_bridge.BATCHED_SPECIALS)
    torch_bridge.recipe_model(bundle, config, arguments.source)  # strict=True, before spawning
    carried = config.get("attograd", {}).get("metadata", {})
    if not isinstance(carried, dict):
        carried = {}
    data = arguments.data or carried.get("data") or "data/eng-fra.tsv"
    direction = carried.get("direction", "eng-fra")
    if direction not in ("eng-fra", "fra-eng"):
        raise BridgeError(f"{shown(arguments.source, 300)}: direction '{shown(direction)}' is "
                          "not eng-fra or fra-eng")
    count = arguments.num_examples
    if count is None:
        text = carried.get("num_examples", "600")
        count = int(text) if str(text).isdigit() and int(text) > 0 else 600
    pairs = read_pairs(data, direction, count)
    num_steps = config["num_steps"]
    source, source_lens = padded([s for s, _ in pairs], bundle["source_words"], num_steps)
    target, target_lens = padded([t for _, t in pairs], bundle["target_words"], num_steps)
    torchrun = "RANK" in os.environ and "WORLD_SIZE" in os.environ and "LOCAL_RANK" in os.environ
    addr = arguments.master_addr or os.environ.get("MASTER_ADDR") or "127.0.0.1"
    port = arguments.master_port or int(os.environ.get("MASTER_PORT", 0) or 0)
    if not port:
        if arguments.nnodes > 1:
            raise BridgeError("--nnodes > 1 needs --master-port (or MASTER_PORT): the port "
                              "node 0 listens on, the same on every node")
        port = free_port()
    return {"bundle": bundle, "config": config, "source": arguments.source,
            "out": arguments.out, "report": arguments.report,
            "arrays": (source, source_lens, target, target_lens),
            "steps": arguments.steps, "batch": arguments.batch, "lr": arguments.lr,
            "seed": arguments.seed, "nproc": arguments.nproc, "node_rank": arguments.node_rank,
            "world_size": arguments.nproc * arguments.nnodes, "addr": addr, "port": port,
            "torchrun": torchrun}


def bounded(kind, low, high):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{shown(text, 60)}' is not a number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{shown(text, 60)} is outside [{low}, {high}]")
        return value
    return parse


def main(argv):
    parser = torch_bridge.Parser(prog="torch_finetune.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("source",
                        help="bundle of torch_bridge.py to-torch (batched or transformer)")
    parser.add_argument("out", help="the fine-tuned bundle (for torch_bridge.py from-torch)")
    parser.add_argument("--nproc", type=bounded(int, 1, MAX_PROCESSES), default=2,
                        help="processes on this machine (default 2)")
    parser.add_argument("--steps", type=bounded(int, 1, 10_000_000), default=100,
                        help="optimizer steps (default 100)")
    parser.add_argument("--batch", type=bounded(int, 1, 4096), default=64,
                        help="pairs per step over all processes (default 64)")
    parser.add_argument("--lr", type=bounded(float, 1e-12, 10.0), default=0.001,
                        help="Adam's learning rate (default 0.001)")
    parser.add_argument("--data", help="pairs file (default: the one the checkpoint names)")
    parser.add_argument("--num-examples", type=bounded(int, 1, 100_000),
                        help="the first N pairs (default: as many as training used)")
    parser.add_argument("--seed", type=bounded(int, 0, 2 ** 31 - 1), default=0)
    parser.add_argument("--report", help="JSON lines: each step's loss and parameter digests")
    parser.add_argument("--nnodes", type=bounded(int, 1, MAX_NODES), default=1,
                        help="machines in the job (default 1)")
    parser.add_argument("--node-rank", type=bounded(int, 0, MAX_NODES - 1), default=0,
                        help="this machine's index, 0 on the one named by --master-addr")
    parser.add_argument("--master-addr", help="node 0's address (default 127.0.0.1)")
    parser.add_argument("--master-port", type=bounded(int, 1, 65535),
                        help="node 0's port (default: a free one; required with --nnodes > 1)")
    arguments = parser.parse_args(argv)
    if arguments.node_rank >= arguments.nnodes:
        parser.error(f"--node-rank {arguments.node_rank} must be below --nnodes "
                     f"{arguments.nnodes}")
    try:
        # The paths first (the output's folder now, not after the training),
        # then PyTorch and the bundle.
        torch_bridge.check_regular(arguments.source, "torch.save bundle")
        torch_bridge.check_writable(arguments.out)
        use_torch()
        job = prepare(arguments)
    except BridgeError as error:
        print(f"error: {error.args[0]}", file=sys.stderr)
        return 2
    import torch.multiprocessing as mp
    if job["torchrun"]:
        worker(int(os.environ["LOCAL_RANK"]), job)
    else:
        try:
            mp.spawn(worker, args=(job,), nprocs=arguments.nproc, join=True)
        except Exception as error:  # a process failed: its traceback is above
            lines = str(error).strip().splitlines()
            reason = shown(lines[-1] if lines else error)
            print(f"error: torch_finetune.py: a process failed ({reason})", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
