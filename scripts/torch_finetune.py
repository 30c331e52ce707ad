#!/usr/bin/env python3
"""Fine-tune an exported translation model with PyTorch's DistributedDataParallel.

  torch_finetune.py SOURCE OUT [--nproc N] [--steps K] [--batch B] [--lr LR]
                    [--data PATH] [--num-examples N] [--seed S] [--report FILE]
                    [--nnodes M --node-rank R --master-addr A --master-port P]
                    [--timeout SECONDS]

SOURCE is a bundle of `torch_bridge.py to-torch` for the batched or the
Transformer recipe, or for the character GPT; OUT is the same bundle with
the fine-tuned weights, which `torch_bridge.py from-torch` turns back into a
checkpoint for `translate translate` and `translate eval`, or for `gpt sample`
(docs/pytorch.md walks through it).

A GPT bundle trains on the text the checkpoint names (gpt.data and
gpt.column, as `gpt train` read it; --data PATH a plain UTF-8 text instead),
split 90/10 as `gpt train` splits it: each step draws --batch random windows
of block_size + 1 characters from the first 90 % (the same offsets in every
process, its rank-th share each), the loss is the mean next-character
cross-entropy, and the report's loss before and after is over the last 10 %'s
consecutive windows. Every character of the text must be in the bundle's.

The run: N processes on this machine (torch.multiprocessing), joined by the
gloo backend over TCP on 127.0.0.1 and a free port. Every process builds the
model from SOURCE; each step, every process takes its own share of one batch of
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
flags, no pairs, OUT or --report naming SOURCE, a data file or each other)
with a one-line "error: ..." message, before any process starts.

Network faults end the same way, exit 2 and one line naming the address, the
port or rank and the remedy, bounded by --timeout SECONDS (default 60): a
--master-port already in use (checked before any process starts: at once); no
node 0 listening at --master-addr:--master-port (a node of rank 1 or more
waits --timeout for it); a job whose processes do not all arrive (PyTorch waits
up to twice --timeout); a process that dies mid-run (at once: the others stop,
the line names its rank). A collective that waits longer than --timeout for the
slowest process fails the same way: raise it for steps that take longer. On
every failure OUT and --report are left as they were.
"""
import datetime
import errno
import hashlib
import io
import json
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_bridge  # noqa: E402  (the bundle's checks, atomic writes)
from torch_bridge import BridgeError, bounded, shown  # noqa: E402
from paths_apart import PathsApart, PathsClash  # noqa: E402

# PyTorch, imported once the command line and the paths have passed their
# checks (use_torch): importing it takes about 1.5 s.
torch = None
MAX_PROCESSES = 64
MAX_NODES = 1024
MAX_TIMEOUT = 86400
# Test only (tests/models/test_torch_bridge.cpp): "RANK:STEP" makes that rank
# leave with exit status 3 after that step, as a process that dies would.
TEST_EXIT_VARIABLE = "ATTOGRAD_TEST_FINETUNE_EXIT"


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


# --------------------------------------------------------------- the character GPT

def read_gpt_text(path, column, characters):
    """The ids of a text as `gpt train` reads it (models/gpt/char_data.cpp): a
    UTF-8 file, or with column ≥ 0 that tab-separated column of each non-empty
    line, each followed by a newline; every character in the model's vocabulary."""
    data = torch_bridge.read_regular(path, "text file")
    if not data:
        raise BridgeError(f"{shown(path, 300)}: empty; pass the text the GPT was trained on")
    nul = data.find(b"\0")
    if nul >= 0:
        raise BridgeError(f"{shown(path, 300)}: holds a NUL byte at byte {nul}: a "
                          "binary file, not text; pass the text the GPT was trained on")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BridgeError(f"{shown(path, 300)}: not UTF-8 at byte {error.start}; pass the text "
                          "the GPT was trained on") from None
    if column >= 0:
        lines = []
        for line in text.split("\n"):
            line = line[:-1] if line.endswith("\r") else line
            fields = line.split("\t")
            if line and column < len(fields):
                lines.append(fields[column] + "\n")
        text = "".join(lines)
    return torch_bridge.gpt_encode(text, characters, shown(path, 300))


def gpt_windows(ids, offsets, block):
    """(inputs, targets), (W,T) each: the windows at `offsets` and the same one id later."""
    inputs = torch.stack([ids[o:o + block] for o in offsets.tolist()])
    targets = torch.stack([ids[o + 1:o + block + 1] for o in offsets.tolist()])
    return inputs, targets


def gpt_loss(model, inputs, targets):
    """The mean next-character cross-entropy of (W,T) windows."""
    logits = model(inputs)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             targets.reshape(-1))


def gpt_full_loss(model, arrays):
    """The mean loss over the validation windows of char_data's window_offsets:
    consecutive, T inputs each, while j·T + T + 1 ≤ size."""
    _, validation, block = arrays
    offsets = torch.arange(0, validation.numel() - block, block)
    model.eval()
    with torch.no_grad():
        loss = float(gpt_loss(model, *gpt_windows(validation, offsets, block)))
    model.train()
    return loss


def prepare_gpt(arguments, bundle):
    """prepare() for a GPT bundle: its text split 90/10 as `gpt train` splits it."""
    source = arguments.source
    config, characters = torch_bridge.gpt_bundle(bundle, source)
    torch_bridge.gpt_model(bundle["model"], config, source)  # strict=True, before spawning
    carried = config.get("attograd", {}).get("metadata", {})
    if not isinstance(carried, dict):
        carried = {}
    named = carried.get("gpt.data") if isinstance(carried.get("gpt.data"), str) else None
    data = arguments.data or named or "data/eng-fra.tsv"
    if arguments.data:
        column = -1
    elif named:
        text = carried.get("gpt.column", "-1")
        column = int(text) if text.lstrip("-").isdigit() and int(text) >= -1 else -1
    else:
        column = 1  # `gpt train`'s default: the French side
    paths = PathsApart().reads("SOURCE", source).reads("--data", arguments.data)
    paths.reads("the data file SOURCE names", named)
    if not arguments.data and not named:
        paths.reads("--data (its default)", data)
    paths.writes("OUT", arguments.out).writes("--report", arguments.report).check()
    ids = torch.tensor(read_gpt_text(data, column, characters))
    block = config["block_size"]
    train = ids[:int(0.9 * ids.numel())].clone()
    validation = ids[int(0.9 * ids.numel()):].clone()
    if train.numel() <= block or validation.numel() < block + 1:
        raise BridgeError(f"{shown(data, 300)}: {ids.numel()} characters: its 90 % and 10 % "
                          f"must each hold a window of block {block} + 1; pass a text of at "
                          f"least {10 * (block + 1)} characters")
    return config, (train, validation, block)


def use_torch():
    global torch
    torch = torch_bridge.import_torch()


# --------------------------------------------------------------- one process

def worker(local_rank, job):
    """One process of the job: rank node_rank · nproc + local_rank of world_size."""
    use_torch()  # a spawned process imports this file afresh
    import torch.distributed as dist

    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=job["timeout"])
    start = time.monotonic()
    try:
        if job["torchrun"]:
            rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
            dist.init_process_group("gloo", init_method="env://", timeout=timeout)
        else:
            rank, world = job["node_rank"] * job["nproc"] + local_rank, job["world_size"]
            dist.init_process_group("gloo", init_method=f"tcp://{job['addr']}:{job['port']}",
                                    rank=rank, world_size=world, timeout=timeout)
    except RuntimeError as error:
        reason = str(error).strip().splitlines()
        reason = reason[-1] if reason else type(error).__name__
        if "address already in use" in reason.lower():
            fault(job, port_in_use(job))
        # PyTorch waits up to --timeout twice: for the processes to reach the
        # store, then for their addresses in it.
        fault(job, f"the job's {job['world_size']} processes did not all meet at "
              f"{job['addr']}:{job['port']}: rank {rank} waited "
              f"{time.monotonic() - start:.0f} s (--timeout {job['timeout']:g}; "
              f"{shown(reason)}); start every node within --timeout of node 0, with the same "
              "--master-addr, --master-port and --nnodes")
    progress = {"step": 0, "peers": []}
    try:
        train(rank, world, job, progress)
    except RuntimeError as error:  # gloo: a peer closed its connection or timed out
        reason = str(error).strip().splitlines()
        reason = shown(reason[-1] if reason else type(error).__name__)
        gone = [peer for peer, (host, pid) in enumerate(progress["peers"])
                if host == socket.gethostname() and peer != rank and not running(pid)]
        who = (f"rank{'s' if len(gone) > 1 else ''} {', '.join(map(str, gone))} of {world} "
               "ended" if gone else
               f"one of the job's {world} processes ended or stopped answering for --timeout "
               f"{job['timeout']:g} s")
        when = (f"during step {progress['step'] + 1}" if progress["step"] < job["steps"] else
                "after the last step, before OUT was written")
        fault(job, f"{who} {when} (rank {rank} saw: {reason}); "
              "nothing was written; find why it ended (its messages, a kill, memory) and run "
              "the job again")
    except BridgeError as error:  # rank 0 could not write OUT or --report
        fault(job, error.args[0])
    # Leave without the destructors: tearing down DDP's reducer and the gloo
    # process group at exit can deadlock (the group's thread waits for the
    # GIL the destructor holds; seen with torch 1.13), so a finished run
    # would never end.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def fault(job, message):
    """Ends this process with exit status 2 and `message`: through the parent,
    which prints the first one, or on stderr under torchrun."""
    if job["faults"] is not None:
        job["faults"].put(message)
    else:
        print(f"error: {message}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(2)


def running(pid):
    """Whether process `pid` of this machine runs (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def train(rank, world, job, progress):
    """The steps of one process, then rank 0 writes OUT and --report.
    `progress` holds the steps done and every rank's (host, pid), which the
    message names when a process ends."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    peers = [None] * world
    dist.all_gather_object(peers, (socket.gethostname(), os.getpid()))
    progress["peers"] = peers

    bundle, config = job["bundle"], job["config"]
    gpt = config["recipe"] == "gpt"
    if gpt:
        model = torch_bridge.gpt_model(bundle["model"], config, job["source"]).train()
    else:
        model = torch_bridge.recipe_model(bundle, config, job["source"]).train()
    torch.manual_seed(job["seed"] * 1000 + rank)  # each process its own dropout
    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=job["lr"])
    order = torch.Generator().manual_seed(job["seed"])  # the same batches in every process
    report = []
    leave = os.environ.get(TEST_EXIT_VARIABLE, "")
    measure = gpt_full_loss if gpt else full_loss
    if rank == 0:
        report.append(("before", measure(model, job["arrays"])))
    for step in range(1, job["steps"] + 1):
        if gpt:  # --batch random windows of the training text, the rank-th share each
            train_ids, _, block = job["arrays"]
            offsets = torch.randint(0, train_ids.numel() - block, (job["batch"],),
                                    generator=order)
            mine = offsets[rank::world]
            if mine.numel() == 0:  # more processes than windows in the batch
                mine = offsets[:1]
            loss = gpt_loss(ddp, *gpt_windows(train_ids, mine, block))
        else:
            source, source_lens, target, target_lens = job["arrays"]
            batch = torch.randperm(source.shape[0], generator=order)[:job["batch"]]
            mine = batch[rank::world]
            if mine.numel() == 0:  # more processes than pairs in the batch
                mine = batch[:1]
            loss = masked_loss(ddp, source[mine], source_lens[mine], target[mine],
                               target_lens[mine])
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
        progress["step"] = step
        if leave == f"{rank}:{step}":
            os._exit(3)
    # Every process has taken every step before rank 0 writes: a process that
    # dies during the run leaves OUT and --report as they were.
    dist.barrier()
    if rank == 0:
        report.append(("after", measure(model, job["arrays"])))
        (finish_gpt if gpt else finish)(model, job, report)


def full_loss(model, arrays):
    """The loss over every pair, dropout off."""
    model.eval()
    with torch.no_grad():
        loss = float(masked_loss(model, *arrays))
    model.train()
    return loss


def write_outputs(job, bundle, report, before, after):
    """Rank 0: the fine-tuned bundle at OUT and, with --report, one JSON line a
    step and the losses before and after, each written atomically."""
    buffer = io.BytesIO()
    torch.save(bundle, buffer)
    torch_bridge.write_atomic(job["out"], buffer.getvalue())
    if job["report"]:
        lines = [json.dumps(entry) for kind, entry in report if kind == "step"]
        lines.append(json.dumps({"loss_before": before, "loss_after": after}))
        torch_bridge.write_atomic(job["report"], ("\n".join(lines) + "\n").encode())


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
    write_outputs(job, bundle, report, before, after)
    print(f"wrote {shown(job['out'], 300)}: loss over the {job['arrays'][0].shape[0]} pairs "
          f"{before:.4f} -> {after:.4f} after {job['steps']} steps on {job['world_size']} "
          "processes", flush=True)


def finish_gpt(model, job, report):
    """Rank 0: the GPT bundle with the fine-tuned weights (lm_head.weight still
    transformer.wte.weight), and the report."""
    before, after = report[0][1], report[-1][1]
    config = dict(job["config"])
    extra = dict(config.get("attograd", {}))
    metadata = dict(extra.get("metadata", {}))
    metadata["gpt.finetune"] = json.dumps({"steps": job["steps"], "processes": job["world_size"],
                                           "batch": job["batch"], "lr": job["lr"],
                                           "loss_before": before, "loss_after": after})
    extra["metadata"] = metadata
    config["attograd"] = extra
    bundle = {"model": model.state_dict(), "characters": job["bundle"]["characters"],
              "config": json.dumps(config)}
    write_outputs(job, bundle, report, before, after)
    windows = job["arrays"][1].numel() // job["arrays"][2]
    print(f"wrote {shown(job['out'], 300)}: validation loss over ~{windows} windows "
          f"{before:.4f} -> {after:.4f} after {job['steps']} steps on {job['world_size']} "
          "processes", flush=True)


# --------------------------------------------------------------- the command

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def port_in_use(job):
    remedy = ("give another --master-port, the same on every node" if job["nnodes"] > 1 else
              "give another --master-port, or omit it for a free port")
    return (f"--master-port {job['port']}: {job['addr']}:{job['port']} is in use (another job "
            f"or program listens there); {remedy}")


def check_port_free(job):
    """Node 0: the port node 0's store will listen on (every address, as
    PyTorch's TCPStore does) can be bound now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("", job["port"]))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise BridgeError(port_in_use(job)) from None
            raise BridgeError(f"cannot listen on port {job['port']} ({error.strerror}); give "
                              "another --master-port") from None


def wait_for_master(job):
    """A node of rank 1 or more: node 0 listens at addr:port within --timeout."""
    start = time.monotonic()
    deadline = start + job["timeout"]
    while True:
        try:
            with socket.create_connection((job["addr"], job["port"]),
                                          timeout=max(0.1, min(1.0, deadline - time.monotonic()))):
                return
        except OSError as error:
            reason = error.strerror or type(error).__name__
        if time.monotonic() >= deadline:
            break
        time.sleep(min(0.25, max(0.0, deadline - time.monotonic())))
    raise BridgeError(f"no node 0 at {job['addr']}:{job['port']}: waited "
                      f"{time.monotonic() - start:.0f} s (--timeout {job['timeout']:g}; last "
                      f"try: {shown(reason)}); start node 0 first, or check --master-addr and "
                      "--master-port")


def prepare(arguments):
    """Every check before a process starts; the job every process gets."""
    bundle = torch_bridge.load_bundle(arguments.source)
    if torch_bridge.is_gpt_bundle(bundle):
        config, arrays = prepare_gpt(arguments, bundle)
        # Every tensor its own storage: mp.spawn passes a shared storage (the
        # tied head, a slice of the text) as one descriptor per tensor, twice
        # over, which Python refuses ("bad value(s) in fds_to_keep").
        bundle = dict(bundle, model={name: value.clone()
                                     for name, value in bundle["model"].items()})
        return job_of(arguments, bundle, config, arrays)
    recipe, config = torch_bridge.bundle_recipe(bundle, arguments.source)
    if recipe not in torch_bridge.RECIPE_SIZES:
        raise BridgeError(f"{shown(arguments.source, 300)}: a {recipe}-recipe bundle; "
                          "torch_finetune.py fine-tunes the batched and transformer recipes "
                          "and the GPT (train one with `translate train --recipe transformer` "
                          "or `gpt train`)")
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
    named = carried.get("data") if isinstance(carried.get("data"), str) else None
    paths = PathsApart().reads("SOURCE", arguments.source).reads("--data", arguments.data)
    paths.reads("the data file SOURCE names", named)
    if not arguments.data and not named:
        paths.reads("--data (its default)", data)
    paths.writes("OUT", arguments.out).writes("--report", arguments.report).check()
    pairs = read_pairs(data, direction, count)
    num_steps = config["num_steps"]
    source, source_lens = padded([s for s, _ in pairs], bundle["source_words"], num_steps)
    target, target_lens = padded([t for _, t in pairs], bundle["target_words"], num_steps)
    return job_of(arguments, bundle, config, (source, source_lens, target, target_lens))


def job_of(arguments, bundle, config, arrays):
    """The job every process gets: the model, its data and the network."""
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
            "arrays": arrays,
            "steps": arguments.steps, "batch": arguments.batch, "lr": arguments.lr,
            "seed": arguments.seed, "nproc": arguments.nproc, "node_rank": arguments.node_rank,
            "world_size": arguments.nproc * arguments.nnodes, "addr": addr, "port": port,
            "nnodes": arguments.nnodes, "timeout": arguments.timeout, "torchrun": torchrun,
            "faults": None}


def main(argv):
    parser = torch_bridge.Parser(
        prog="torch_finetune.py", description=__doc__.split("\n\n")[0],
        epilog="A network fault (a --master-port in use, no node 0 at --master-addr, a job "
               "whose processes do not all meet, a process that dies mid-run) ends with exit "
               "status 2 and one line naming the address, port or rank and the remedy, within "
               "at most twice --timeout seconds, and leaves OUT and --report as they were "
               "(docs/pytorch.md).")
    parser.add_argument("source", metavar="SOURCE",
                        help="bundle of torch_bridge.py to-torch (batched, transformer or gpt)")
    parser.add_argument("out", metavar="OUT",
                        help="the fine-tuned bundle (for torch_bridge.py from-torch); not "
                             "SOURCE, --report nor a data file")
    parser.add_argument("--nproc", type=bounded(int, 1, MAX_PROCESSES), default=2,
                        help="processes on this machine (default 2)")
    parser.add_argument("--steps", type=bounded(int, 1, 10_000_000), default=100,
                        help="optimizer steps (default 100)")
    parser.add_argument("--batch", type=bounded(int, 1, 4096), default=64,
                        help="pairs per step over all processes (default 64)")
    parser.add_argument("--lr", type=bounded(float, 1e-12, 10.0), default=0.001,
                        help="Adam's learning rate (default 0.001)")
    parser.add_argument("--data", help="pairs file, or for a GPT a UTF-8 text (default: the one "
                                       "the checkpoint names)")
    parser.add_argument("--num-examples", type=bounded(int, 1, 100_000),
                        help="the first N pairs (default: as many as training used)")
    parser.add_argument("--seed", type=bounded(int, 0, 2 ** 31 - 1), default=0)
    parser.add_argument("--report", help="JSON lines: each step's loss and parameter digests "
                                         "(not OUT nor an input)")
    parser.add_argument("--nnodes", type=bounded(int, 1, MAX_NODES), default=1,
                        help="machines in the job (default 1)")
    parser.add_argument("--node-rank", type=bounded(int, 0, MAX_NODES - 1), default=0,
                        help="this machine's index, 0 on the one named by --master-addr")
    parser.add_argument("--master-addr", help="node 0's address (default 127.0.0.1)")
    parser.add_argument("--master-port", type=bounded(int, 1, 65535), metavar="PORT",
                        help="node 0's port (default: a free one; required with --nnodes > 1)")
    parser.add_argument("--timeout", type=bounded(float, 1, MAX_TIMEOUT), default=60.0,
                        metavar="SECONDS",
                        help="seconds to wait for node 0, for the job's processes to meet and "
                             "for each collective step before ending with exit status 2 "
                             "(default 60)")
    arguments = parser.parse_args(argv)
    if arguments.node_rank >= arguments.nnodes:
        parser.error(f"--node-rank {arguments.node_rank} must be below --nnodes "
                     f"{arguments.nnodes}")
    try:
        # The paths first (the output's folder now, not after the training),
        # then PyTorch and the bundle.
        PathsApart().reads("SOURCE", arguments.source).reads("--data", arguments.data) \
            .writes("OUT", arguments.out).writes("--report", arguments.report).check()
        torch_bridge.check_regular(arguments.source, "torch.save bundle")
        torch_bridge.check_writable(arguments.out)
        if arguments.report:
            torch_bridge.check_writable(arguments.report)
        use_torch()
        job = prepare(arguments)
        if not job["torchrun"]:
            if arguments.node_rank == 0 and (arguments.master_port or
                                             os.environ.get("MASTER_PORT")):
                check_port_free(job)
            elif arguments.node_rank > 0:
                wait_for_master(job)
    except (BridgeError, PathsClash) as error:
        print(f"error: {error.args[0]}", file=sys.stderr)
        return 2
    import torch.multiprocessing as mp
    if job["torchrun"]:
        worker(int(os.environ["LOCAL_RANK"]), job)
        return 0
    job["faults"] = mp.get_context("spawn").SimpleQueue()
    # The processes' faults reach the user as one line (fault()); c10d's own
    # C++ log lines about them (a port it cannot bind) would come on top.
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
    processes = mp.spawn(worker, args=(job,), nprocs=arguments.nproc, join=False)
    try:
        while not processes.join():
            pass
    except mp.ProcessExitedException as error:
        print(f"error: {died(error, processes.processes, job)}", file=sys.stderr)
        return 2
    except Exception as error:  # a process raised: its traceback is above
        lines = str(error).strip().splitlines()
        reason = shown(lines[-1] if lines else error)
        print(f"error: torch_finetune.py: a process failed ({reason})", file=sys.stderr)
        return 1
    return 0


def died(error, processes, job):
    """The line for a process of this machine that ended before the job did:
    the rank that died, when one did (not with status 2, a fault it stated,
    nor by the SIGTERM with which mp.spawn stops the others), else the first
    fault a process stated."""
    index, code = error.error_index, error.exit_code
    if code == 2:
        for other, process in enumerate(processes):
            if process.exitcode not in (None, 0, 2, -signal.SIGTERM):
                index, code = other, process.exitcode
                break
    if code == 2 and not job["faults"].empty():
        return job["faults"].get()
    rank = job["node_rank"] * job["nproc"] + index
    how = (f"was killed by {signal.Signals(-code).name}" if code < 0 else
           f"ended with exit status {code}")
    return (f"rank {rank} of {job['world_size']} (process {index} on this machine) {how} "
            "before the job finished; the others were stopped and nothing was written; find "
            "why it ended (its messages above, a kill, memory) and run the job again")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
