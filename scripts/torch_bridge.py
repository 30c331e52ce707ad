#!/usr/bin/env python3
"""Move a translation model or the character GPT between attograd and PyTorch
(docs/pytorch.md).

  torch_bridge.py to-torch CHECKPOINT OUT.pt
      An attograd checkpoint of `translate train` (any recipe) becomes
      torch.save({'encoder': state_dict, 'decoder': state_dict,
                  'source_words': [...], 'target_words': [...], 'config': '{...}'}),
      the config one JSON string (its "recipe" says which modules load it).
  torch_bridge.py from-torch IN.pt OUT.safetensors [--data PATH]
      The reverse: a model in that layout (trained or fine-tuned in PyTorch,
      say) becomes a checkpoint `translate translate` and `translate eval` use.
  torch_bridge.py translate IN.pt [--json]
      Greedy translation in PyTorch of each line of stdin, one sentence a
      line as `translate translate` prints it; with --json one object a line:
      {"words": [...], "log_prob": ...} (Σ log p of the chosen ids, EOS
      included). Tutorial lines are already normalised words; batched and
      Transformer lines are normalised as `translate` does (d2l's preprocess).
  torch_bridge.py sample IN.pt [--prompt P --tokens N --temperature T --top-k K --seed S]
      A GPT bundle continues P in PyTorch and prints what `gpt sample` prints
      for the same flags: the same window policy and the same draw, one
      uniform of attograd's Generator(S) per character.

A checkpoint of `gpt train` (metadata gpt.*) becomes
torch.save({'model': state_dict, 'characters': [...], 'config': '{...}'}),
the state dict nanoGPT's GPT's (scripts/torch_models.py's GPT: transformer.wte.weight,
transformer.h.0.attn.c_attn.weight, …, and lm_head.weight, one tensor with
transformer.wte.weight), config recipe "gpt"; from-torch takes it back.

The state dicts load with strict=True into these classes of
scripts/torch_models.py:
  tutorial     the PyTorch tutorial "NLP From Scratch: Translation with a
               Sequence to Sequence Network and Attention": EncoderRNN(len(source_words), H)
               and, for --decoder location, the tutorial's AttnDecoderRNN(H,
               len(target_words), dropout_p, max_length); for --decoder
               bahdanau, the newer tutorial's decoder built on
               BahdanauAttention (BahdanauAttnDecoderRNN there). Word i has id
               i: 0 SOS, 1 EOS, 2 <unk> (attograd's tutorial layout adds <unk>).
  batched      d2l's Seq2SeqEncoder and Seq2SeqAttentionDecoder;
  transformer  d2l's TransformerEncoder and TransformerDecoder.
               Word ids of both: 0 <pad>, 1 <bos>, 2 <eos>, 3 <unk>.

Files are untrusted: a .pt file is read with torch.load(weights_only=True), so
unpickling it runs no code (the bundle holds dicts, lists, strings, integers
and tensors only: the config is a JSON string for that reason); only regular
files are read; every value `translate` would check is checked before
anything is written, and writes are atomic (a temporary file, then rename).
No output replaces an input (scripts/paths_apart.py): OUT that is CHECKPOINT,
SOURCE, --data or the data file they name, by any spelling or link, is refused.

Needs Python 3 and torch; the only part of the project that uses PyTorch
(with scripts/torch_models.py and scripts/torch_finetune.py). A command checks
its arguments and paths before it imports torch, so those errors come at once.
Exits 2 on bad input with a one-line "error: ..." message.
"""
import argparse
import io
import json
import math
import os
import stat
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paths_apart import PathsApart, PathsClash  # noqa: E402  (no output replaces an input)

# PyTorch takes about 1.5 s to import, so a command checks its arguments and
# the paths it was given first: import_torch() loads it then.
torch = None
torch_models = None

FORMAT = "attograd-seq2seq 1"
VOCABULARY_MAGIC = "attograd-vocabulary 1"
SPECIALS = ["SOS", "EOS", "<unk>"]
SOS, EOS = 0, 1
# The batched and Transformer recipes' layout (models/text/vocabulary.hpp, kBatchedLayout).
BATCHED_SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]
PAD, BOS, BATCHED_EOS, UNK = 0, 1, 2, 3
RECIPES = ("tutorial", "batched", "transformer")

# The limits `translate` holds a tutorial checkpoint to
# (examples/translate/size_limits.hpp: kMaxHidden, kMaxSteps).
MAX_HIDDEN = 4096
MAX_LENGTH = 512
# The largest file either direction reads: a tutorial model at H = 4096 with
# 100,000 words a side is about 3.5 GB of float32; more is not a checkpoint.
MAX_FILE_BYTES = 4 << 30
# nn/safetensors_header.hpp's kMaxHeaderBytes.
MAX_HEADER_BYTES = 100_000_000
# The marker of the project's temporary files (tensor/atomic_file.hpp):
# "<name>.attograd-tmp.<pid>.<tag>".
TEMPORARY_MARKER = ".attograd-tmp."


class BridgeError(Exception):
    """Bad input: the message names the file and the remedy."""


def import_torch():
    """PyTorch (and scripts/torch_models.py, beside this file), imported once."""
    global torch, torch_models
    if torch is None:
        try:
            import torch as module
        except ImportError:
            raise BridgeError("torch is not installed for this interpreter; on Debian: "
                              "apt-get install python3-torch") from None
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import torch_models as models
        torch, torch_models = module, models
    return torch


def shown(text, limit=120):
    """User text for a message: non-printable characters escaped, cut to `limit`."""
    text = str(text)
    cut = len(text) > limit
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:limit])
    return text + ("…" if cut else "")


# --------------------------------------------------------------- files

def open_regular(path, what):
    """A descriptor of `path`, which must be a regular file of at most MAX_FILE_BYTES.

    Opened without blocking and checked with fstat before reading, so a FIFO,
    a device (/dev/zero) or a directory is refused at once rather than read.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise BridgeError(f"cannot read {what} {shown(path, 300)}: {error.strerror}") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            kind = ("a directory" if stat.S_ISDIR(status.st_mode) else
                    "a FIFO" if stat.S_ISFIFO(status.st_mode) else
                    "a socket" if stat.S_ISSOCK(status.st_mode) else "a device")
            raise BridgeError(f"{shown(path, 300)}: {kind}, not a regular file; pass the {what} "
                              "file itself")
        if status.st_size > MAX_FILE_BYTES:
            raise BridgeError(f"{shown(path, 300)}: {status.st_size} bytes, more than the "
                              f"{MAX_FILE_BYTES} a {what} may have")
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def check_regular(path, what):
    """open_regular's checks alone: what a command does before importing PyTorch."""
    os.close(open_regular(path, what))


def read_regular(path, what):
    """The bytes of `path`, after open_regular's checks."""
    descriptor = open_regular(path, what)
    try:
        os.set_blocking(descriptor, True)
        with os.fdopen(os.dup(descriptor), "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    finally:
        os.close(descriptor)
    if len(data) > MAX_FILE_BYTES:  # grew while being read
        raise BridgeError(f"{shown(path, 300)}: more than the {MAX_FILE_BYTES} bytes a {what} "
                          "may have")
    return data


def check_writable(path):
    """`path` names a file in an existing folder: write_atomic's first checks."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise BridgeError(f"cannot write {shown(path, 300)}: {shown(folder, 300)} is not a folder")
    if os.path.isdir(path):
        raise BridgeError(f"cannot write {shown(path, 300)}: it is a folder; name a file")


def write_atomic(path, data):
    """Writes `data` to `path` through a temporary beside it and a rename, so
    `path` is either its old self or complete, whatever happens (a full disk,
    a kill)."""
    check_writable(path)
    shown_path = shown(path, 300)
    folder = os.path.dirname(os.path.abspath(path))
    temporary = f"{path}{TEMPORARY_MARKER}{os.getpid()}.bridge"
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        with os.fdopen(descriptor, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except OSError as error:
        try:
            os.remove(temporary)
        except OSError:
            pass
        raise BridgeError(f"cannot write {shown_path}: {error.strerror}; an existing "
                          f"{os.path.basename(shown_path)} was left as it was") from None
    try:  # the rename itself survives a power cut once the folder is synced
        folder_descriptor = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(folder_descriptor)
        finally:
            os.close(folder_descriptor)
    except OSError:
        pass


def load_bundle(path):
    """A torch.save file, unpickled with weights_only=True: no code runs."""
    data = read_regular(path, "torch.save bundle")
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many types for a damaged or hostile file
        text = str(error)
        reason = text[text.find("WeightsUnpickler error:"):] if "WeightsUnpickler" in text else text
        reason = reason.splitlines()[0] if reason else type(error).__name__
        hint = ""
        if "Unsupported operand 71" in reason:  # pickle's BINFLOAT: a float outside a tensor
            hint = " (a Python float outside a tensor: put numbers in the config's JSON string)"
        raise BridgeError(f"{shown(path, 300)}: refused: torch.load(weights_only=True) cannot read "
                          f"it ({shown(reason)}){hint}; a bundle holds only dicts, lists, strings, "
                          "integers and tensors (docs/pytorch.md)") from None


# --------------------------------------------------------------- safetensors

DTYPES = {"F32": 4, "F64": 8}


def is_integer(value):
    return isinstance(value, int) and not isinstance(value, bool)


def read_safetensors(path):
    """(dict name -> float32 tensor in file order, metadata dict) of a safetensors file,
    every header entry checked before any tensor is made."""
    data = read_regular(path, "checkpoint")
    where = shown(path, 300)
    if len(data) < 8:
        raise BridgeError(f"{where}: {len(data)} bytes long; a safetensors file starts with "
                          "an 8-byte header length")
    (header_length,) = struct.unpack("<Q", data[:8])
    if header_length > min(len(data) - 8, MAX_HEADER_BYTES):
        raise BridgeError(f"{where}: not a safetensors file (its first 8 bytes give a header of "
                          f"{header_length} bytes, but {len(data) - 8} follow); pass a "
                          "checkpoint written by `translate train`")
    try:
        header = json.loads(data[8:8 + header_length])
    except (ValueError, RecursionError) as error:
        raise BridgeError(f"{where}: the header is not valid JSON ({shown(error)})") from None
    if not isinstance(header, dict):
        raise BridgeError(f"{where}: the header is a JSON {type(header).__name__}, not an object")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(value, str)
                                                 for value in metadata.values()):
        raise BridgeError(f"{where}: '__metadata__' must be an object of strings")
    body = memoryview(data)[8 + header_length:]
    entries = []
    for name, entry in header.items():
        problem = None
        if not isinstance(entry, dict):
            problem = f"is a JSON {type(entry).__name__}, not an object"
        elif entry.get("dtype") not in DTYPES:
            problem = f"has dtype {shown(entry.get('dtype'))}; attograd writes F32 and F64 only"
        elif (not isinstance(entry.get("shape"), list) or len(entry["shape"]) > 64
              or not all(is_integer(size) and size >= 0 for size in entry["shape"])):
            problem = f"has shape {shown(entry.get('shape'))}, not a list of sizes ≥ 0"
        elif (not isinstance(entry.get("data_offsets"), list) or len(entry["data_offsets"]) != 2
              or not all(is_integer(offset) for offset in entry["data_offsets"])
              or not 0 <= entry["data_offsets"][0] <= entry["data_offsets"][1] <= len(body)):
            problem = (f"has data_offsets {shown(entry.get('data_offsets'))}, not [begin, end] "
                       f"within the {len(body)} bytes of data")
        elif (entry["data_offsets"][1] - entry["data_offsets"][0]
              != math.prod(entry["shape"]) * DTYPES[entry["dtype"]]):
            problem = (f"has shape {entry['shape']} but {entry['data_offsets'][1] - entry['data_offsets'][0]} "
                       "bytes of data")
        if problem:
            raise BridgeError(f"{where}: tensor '{shown(name)}' {problem}; the file is damaged")
        entries.append((entry["data_offsets"][0], name, entry))
    tensors = {}
    for _, name, entry in sorted(entries, key=lambda item: item[0]):
        begin, end = entry["data_offsets"]
        dtype = torch.float32 if entry["dtype"] == "F32" else torch.float64
        values = torch.frombuffer(bytearray(body[begin:end]), dtype=dtype) if end > begin else \
            torch.zeros(0, dtype=dtype)
        tensors[name] = values.reshape(entry["shape"]).to(torch.float32)
    return tensors, metadata


def write_safetensors(path, tensors, metadata):
    """Writes float32 tensors in the given order, atomically."""
    header = {"__metadata__": metadata}
    chunks, offset = [], 0
    for name, tensor in tensors.items():
        raw = tensor.detach().to(torch.float32).contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    write_atomic(path, struct.pack("<Q", len(text)) + text + b"".join(chunks))


# --------------------------------------------------------------- vocabularies

def check_words(words, key, path, specials=SPECIALS):
    """The rules of attograd's Vocabulary (models/text/vocabulary.cpp) and the
    layout's specials (the tutorial's unless told)."""
    where = shown(path, 300)
    if not isinstance(words, list) or not all(isinstance(word, str) for word in words):
        raise BridgeError(f"{where}: {key} must be a list of strings")
    if words[:len(specials)] != specials:
        ids = ", ".join(f"{i} {word}" for i, word in enumerate(specials))
        raise BridgeError(f"{where}: {key} must start {specials} (id {ids}), "
                          f"found {shown(words[:len(specials)])}; see docs/pytorch.md")
    for index, word in enumerate(words):
        if not word or any(c in word for c in " \t\n\r") or not word.isprintable():
            raise BridgeError(f"{where}: {key}[{index}] is '{shown(word)}'; a word is not empty "
                              "and has no spaces, tabs, line breaks or control characters")
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            raise BridgeError(f"{where}: {key}[{index}] is not valid Unicode") from None
    if len(set(words)) != len(words):
        seen = set()
        twice = next(word for word in words if word in seen or seen.add(word))
        raise BridgeError(f"{where}: {key} names '{shown(twice)}' twice")


def words_of(text, path, key, specials=SPECIALS):
    """The words (id order) and counts of attograd's serialized vocabulary."""
    where = shown(path, 300)
    lines = text.split("\n")

    def damaged(why):
        return BridgeError(f"{where}: '{key}' is not an attograd vocabulary ({why}); pass a "
                           "checkpoint written by `translate train`")

    if len(lines) < 3 or lines[0] != VOCABULARY_MAGIC or not lines[1].startswith("special "):
        raise damaged(f"it does not start '{VOCABULARY_MAGIC}'")
    header = lines[2].split(" ")
    if len(header) != 2 or header[0] != "words" or not header[1].isdigit():
        raise damaged(f"line 3 is '{shown(lines[2])}', not 'words N'")
    count = int(header[1])
    if len(lines) < 3 + count:
        raise damaged(f"it announces {count} words but has {len(lines) - 3} lines")
    words, counts = [], []
    for number, line in enumerate(lines[3:3 + count], start=4):
        word, tab, occurrences = line.rpartition("\t")
        if not tab or not occurrences.isdigit():
            raise damaged(f"line {number} is '{shown(line)}', not 'word<TAB>count'")
        words.append(word)
        counts.append(int(occurrences))
    check_words(words, key, path, specials)
    return words, counts


def vocabulary_text(words, counts, specials=SPECIALS):
    lines = [VOCABULARY_MAGIC, f"special {len(specials)} unknown {len(specials) - 1}",
             f"words {len(words)}"]
    lines += [f"{word}\t{number}" for word, number in zip(words, counts)]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------- values

def checked(path, where, record, key, kind, low=None, high=None):
    """record[key], required to be `kind` ("int", "number", "bool", "str") within
    [low, high]; a message names the file, the entry and the key."""
    if not isinstance(record, dict) or key not in record:
        raise BridgeError(f"{shown(path, 300)}: {where} lacks '{key}' (docs/pytorch.md)")
    value = record[key]
    ok = {"int": is_integer(value),
          "number": (is_integer(value) or isinstance(value, float)) and math.isfinite(value),
          "bool": isinstance(value, bool), "str": isinstance(value, str)}[kind]
    if ok and low is not None and value < low:
        ok = False
    if ok and high is not None and value > high:
        ok = False
    if not ok:
        bounds = ""
        if low is not None or high is not None:
            bounds = f" in [{'-∞' if low is None else low}, {'∞' if high is None else high}]"
        article = "an" if kind == "int" else "a"
        kind_name = {"int": "integer", "number": "finite number", "bool": "true or false",
                     "str": "string"}[kind]
        raise BridgeError(f"{shown(path, 300)}: {where}: '{key}' is {shown(json.dumps(value))}, "
                          f"not {article} {kind_name}{bounds} (docs/pytorch.md)")
    return value


def json_object(text, path, where):
    """`text` parsed as a JSON object, or a message naming the file and the entry."""
    if isinstance(text, dict):
        return text
    if not isinstance(text, str):
        raise BridgeError(f"{shown(path, 300)}: {where} is a {type(text).__name__}, not a JSON "
                          "string")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise BridgeError(f"{shown(path, 300)}: {where} is not valid JSON") from None
    if not isinstance(value, dict):
        raise BridgeError(f"{shown(path, 300)}: {where} is not a JSON object")
    return value


def check_record(path, where, record, fields):
    """Checks a training record's fields: (key, kind, low, high) each."""
    for key, kind, low, high in fields:
        checked(path, where, record, key, kind, low, high)


# What from-torch carries back to `translate` in the seq2seq.* entries, with
# the checks models/seq2seq/training.cpp and the tutorial recipe make.
DATA_FIELDS = [("path", "str", None, None), ("reverse", "bool", None, None),
               ("max_length", "int", 2, MAX_LENGTH), ("validation_fraction", "number", 0, 1),
               ("split_seed", "int", 0, 2 ** 64 - 1)]
TRAINING_FIELDS = [("iterations", "int", 0, 2 ** 63 - 1),
                   ("learning_rate", "number", 0, None),
                   ("teacher_forcing", "number", 0, 1), ("seed", "int", 0, 2 ** 64 - 1),
                   ("print_every", "int", 1, 2 ** 63 - 1), ("plot_every", "int", 1, 2 ** 63 - 1),
                   ("sparse_embeddings", "bool", None, None)]
PROGRESS_FIELDS = [("iteration", "int", 0, 2 ** 63 - 1),
                   ("print_loss_total", "number", None, None),
                   ("plot_loss_total", "number", None, None),
                   ("train_seconds", "number", 0, None)]


def check_progress(path, where, record):
    check_record(path, where, record, PROGRESS_FIELDS)
    for key in ("plot_losses", "interval_losses"):
        values = record.get(key)
        if not isinstance(values, list) or not all(
                (is_integer(v) or isinstance(v, float)) and math.isfinite(v) for v in values):
            raise BridgeError(f"{shown(path, 300)}: {where}'s '{key}' is not a list of finite "
                              "numbers")


def make_modules(bundle, config, path):
    """(encoder, decoder) of a bundle's checked config, with its state dicts loaded strictly."""
    hidden, length = config["hidden_size"], config["max_length"]
    # The shapes that size the modules, checked before the modules are made, so
    # a config claiming H = 4096 beside small tensors allocates nothing.
    expected = {("encoder", "embedding.weight"): (len(bundle["source_words"]), hidden),
                ("encoder", "gru.weight_hh_l0"): (3 * hidden, hidden),
                ("decoder", "embedding.weight"): (len(bundle["target_words"]), hidden)}
    check_state_dicts(bundle, expected, f"the config (hidden_size {hidden})", path)
    encoder = torch_models.EncoderRNN(len(bundle["source_words"]), hidden)
    if config["decoder"] == "location":
        decoder = torch_models.AttnDecoderRNN(hidden, len(bundle["target_words"]),
                                              config["dropout_p"], length)
    else:
        decoder = torch_models.BahdanauAttnDecoderRNN(hidden, len(bundle["target_words"]),
                                                      config["dropout_p"])
    for part, module in (("encoder", encoder), ("decoder", decoder)):
        load_strictly(module, bundle[part], f"the {part} state dict", "tutorial's", path)
    return encoder.eval(), decoder.eval()


def check_state_dicts(bundle, expected, sizer, path):
    """Both state dicts are names to finite floating-point tensors, and the
    tensors in `expected` ((part, name) -> shape) have their shapes: checked
    before any module is made, so a config claiming a large model beside
    small tensors allocates nothing. `sizer` names what sets the shapes."""
    where = shown(path, 300)
    for part in ("encoder", "decoder"):
        state = bundle[part]
        if not isinstance(state, dict) or not all(
                isinstance(name, str) and isinstance(value, torch.Tensor)
                for name, value in state.items()):
            raise BridgeError(f"{where}: '{part}' is not a state dict (names to tensors)")
    for (part, name), shape in expected.items():
        found = bundle[part].get(name)
        if found is None or tuple(found.shape) != shape:
            raise BridgeError(f"{where}: {part} tensor '{name}' is "
                              f"{'missing' if found is None else list(found.shape)}; {sizer} "
                              f"and the words make it {list(shape)}")
    for part in ("encoder", "decoder"):
        for name, value in bundle[part].items():
            if not value.is_floating_point():
                raise BridgeError(f"{where}: {part} tensor '{shown(name)}' holds {value.dtype}, "
                                  "not floating-point numbers")
            if not bool(torch.isfinite(value).all()):
                raise BridgeError(f"{where}: {part} tensor '{shown(name)}' holds a NaN or an "
                                  "infinity; the model diverged: use an earlier checkpoint")


def load_strictly(module, state, what, family, path):
    """module.load_state_dict(state, strict=True), its refusal as a BridgeError."""
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError as error:
        reason = shown(str(error).splitlines()[-1].strip(), 300)
        raise BridgeError(f"{shown(path, 300)}: {what} does not fit the {family} modules: "
                          f"{reason}") from None


def bundle_config(bundle, path):
    """The checked config of a tutorial bundle (a JSON string, or a dict of plain values)."""
    where = shown(path, 300)
    _, config = bundle_recipe(bundle, path)
    checked(path, "'config'", config, "hidden_size", "int", 1, MAX_HIDDEN)
    checked(path, "'config'", config, "max_length", "int", 2, MAX_LENGTH)
    decoder = checked(path, "'config'", config, "decoder", "str")
    if decoder not in ("location", "bahdanau"):
        raise BridgeError(f"{where}: config decoder is '{shown(decoder)}'; expected 'location' "
                          "or 'bahdanau'")
    dropout = checked(path, "'config'", config, "dropout_p", "number", 0, 1)
    if dropout >= 1:
        raise BridgeError(f"{where}: config dropout_p is {dropout}, not in [0, 1)")
    if "reverse" in config:
        checked(path, "'config'", config, "reverse", "bool")
    if config.get("normalization", "tutorial") != "tutorial":
        raise BridgeError(f"{where}: config normalization is "
                          f"'{shown(config['normalization'])}'; attograd's tutorial recipe "
                          "normalises as the tutorial does ('tutorial')")
    check_words(bundle["source_words"], "source_words", path)
    check_words(bundle["target_words"], "target_words", path)
    return config


def greedy(encoder, decoder, ids, max_length):
    """The tutorial's evaluate(): (word ids, EOS excluded; Σ log p of the chosen ids, EOS included)."""
    with torch.no_grad():
        hidden = torch.zeros(1, 1, encoder.hidden_size)
        outputs = torch.zeros(max_length, encoder.hidden_size)
        for position, word in enumerate(ids):
            output, hidden = encoder(torch.tensor([word]), hidden)
            outputs[position] = output[0, 0]
        chosen, log_prob, word = [], 0.0, SOS
        for _ in range(max_length):
            log_probs, hidden, _ = decoder(torch.tensor([word]), hidden, outputs, len(ids))
            word = int(log_probs.argmax(dim=1))
            log_prob += float(log_probs[0, word])
            if word == EOS:
                break
            chosen.append(word)
        return chosen, log_prob


# --------------------------------------------------------------- the layouts

# attograd name (after "encoder." / "decoder.") -> PyTorch state-dict name.
GRU_NAMES = {f"gru.{kind}": f"gru.{kind}" for kind in
             ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")}
ENCODER_NAMES = {"embedding.weight": "embedding.weight", **GRU_NAMES}
LOCATION_NAMES = {**ENCODER_NAMES, "attn.weight": "attn.weight", "attn.bias": "attn.bias",
                  "attn_combine.weight": "attn_combine.weight",
                  "attn_combine.bias": "attn_combine.bias",
                  "out.weight": "out.weight", "out.bias": "out.bias"}
BAHDANAU_NAMES = {**ENCODER_NAMES, "attention.W_q.weight": "attention.Wa.weight",
                  "attention.W_k.weight": "attention.Ua.weight",
                  "attention.w_v.weight": "attention.Va.weight",
                  "out.weight": "out.weight", "out.bias": "out.bias"}
# The newer tutorial's attention has biases attograd's lacks (zero in to-torch).
BAHDANAU_BIASES = {"attention.Wa.bias": "attention.Wa.weight",
                   "attention.Ua.bias": "attention.Ua.weight",
                   "attention.Va.bias": "attention.Va.weight"}


def decoder_names(kind):
    return LOCATION_NAMES if kind == "location" else BAHDANAU_NAMES


def metadata_json(metadata, key, path):
    if key not in metadata:
        raise BridgeError(f"{shown(path, 300)}: the checkpoint has no '{key}' entry; was it "
                          "written by `translate train`?")
    return json_object(metadata[key], path, f"the checkpoint's '{key}' entry")


# --------------------------------------------------------------- batched and Transformer

# The metadata entries that size each recipe's model (examples/translate/
# batched_checkpoint.cpp, transformer_recipe.cpp), with the bounds `translate`
# holds them to (examples/translate/size_limits.hpp).
MAX_LAYERS = 16
RECIPE_SIZES = {
    "batched": [("embed_size", 1, MAX_HIDDEN), ("hidden_size", 1, MAX_HIDDEN),
                ("num_layers", 1, MAX_LAYERS)],
    "transformer": [("num_hiddens", 1, MAX_HIDDEN), ("num_blocks", 1, MAX_LAYERS),
                    ("num_heads", 1, MAX_HIDDEN), ("ffn_num_hiddens", 1, 4 * MAX_HIDDEN)],
}
# Entries from-torch writes when the bundle carries none (a model made in PyTorch).
RECIPE_DEFAULTS = {"direction": "eng-fra", "num_examples": "600", "min_freq": "2",
                   "epochs": "0", "seed": "0", "replicas": "1", "final_loss": "0"}
# Entries to-torch does not carry: the vocabularies and sizes travel in the
# bundle itself, and the optimizer's entries ("attograd.optimizer",
# nn/checkpoint.hpp) and `train --resume`'s ("resume.*") describe Adam's
# state, which stays behind (a bundle holds the model only).
NOT_CARRIED = ("recipe", "source_vocabulary", "target_vocabulary", "dropout", "num_steps")
NOT_CARRIED_PREFIXES = ("attograd.", "resume.")


def carried(key):
    return key not in NOT_CARRIED and not key.startswith(NOT_CARRIED_PREFIXES)


def metadata_int(metadata, key, path, low, high):
    text = metadata_entry(metadata, key, path)
    if not text.isdigit() or not low <= int(text) <= high:
        raise BridgeError(f"{shown(path, 300)}: the checkpoint's {key} is '{shown(text, 60)}', "
                          f"not an integer in [{low}, {high}]; the file was edited or damaged")
    return int(text)


def number_text(value):
    """A number as attograd's metadata writes it (fmt's "{}": the shortest
    text that reads back the same, "0.1", "0", "1e-05")."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def check_recipe_config(config, path):
    """The sizes of a batched or Transformer config, checked."""
    recipe = config["recipe"]
    for key, low, high in RECIPE_SIZES[recipe]:
        checked(path, "'config'", config, key, "int", low, high)
    checked(path, "'config'", config, "num_steps", "int", 2, MAX_LENGTH)
    dropout = checked(path, "'config'", config, "dropout", "number", 0, 1)
    if dropout >= 1:
        raise BridgeError(f"{shown(path, 300)}: config dropout is {dropout}, not in [0, 1)")
    if recipe == "transformer" and config["num_hiddens"] % config["num_heads"] != 0:
        raise BridgeError(f"{shown(path, 300)}: config num_heads {config['num_heads']} does not "
                          f"divide num_hiddens {config['num_hiddens']}")


def recipe_model(bundle, config, path):
    """The batched or Transformer model of a checked config, its state dicts
    loaded with strict=True, in eval mode."""
    recipe = config["recipe"]
    width = config["embed_size"] if recipe == "batched" else config["num_hiddens"]
    # The shapes that size the modules, checked before any module is made, so
    # a config claiming huge sizes beside small tensors allocates nothing.
    expected = {("encoder", "embedding.weight"): (len(bundle["source_words"]), width),
                ("decoder", "embedding.weight"): (len(bundle["target_words"]), width)}
    if recipe == "batched":
        H, last = config["hidden_size"], config["num_layers"] - 1
        expected[("encoder", f"rnn.weight_hh_l{last}")] = (3 * H, H)
        expected[("decoder", f"rnn.weight_hh_l{last}")] = (3 * H, H)
    else:
        d, last = config["num_hiddens"], config["num_blocks"] - 1
        for part in ("encoder", "decoder"):
            expected[(part, f"blks.block{last}.ffn.dense1.weight")] = (config["ffn_num_hiddens"], d)
    check_state_dicts(bundle, expected, "the config", path)
    model = torch_models.MODELS[recipe](config, len(bundle["source_words"]),
                                        len(bundle["target_words"]))
    for part in ("encoder", "decoder"):
        load_strictly(getattr(model, part), bundle[part], f"the {part} state dict",
                      f"{recipe} recipe's", path)
    return model.eval()


def recipe_to_torch(checkpoint, out, tensors, metadata, paths):
    recipe = metadata["recipe"]
    where = shown(checkpoint, 300)
    config = {"recipe": recipe}
    for key, low, high in RECIPE_SIZES[recipe]:
        config[key] = metadata_int(metadata, key, checkpoint, low, high)
    config["num_steps"] = metadata_int(metadata, "num_steps", checkpoint, 2, MAX_LENGTH)
    try:
        config["dropout"] = float(metadata_entry(metadata, "dropout", checkpoint))
    except ValueError:
        config["dropout"] = math.nan
    if not 0 <= config["dropout"] < 1:
        raise BridgeError(f"{where}: the checkpoint's dropout is "
                          f"'{shown(metadata['dropout'], 60)}', not a number in [0, 1); the file "
                          "was edited or damaged")
    source_words, source_counts = words_of(
        metadata_entry(metadata, "source_vocabulary", checkpoint), checkpoint,
        "source_vocabulary", BATCHED_SPECIALS)
    target_words, target_counts = words_of(
        metadata_entry(metadata, "target_vocabulary", checkpoint), checkpoint,
        "target_vocabulary", BATCHED_SPECIALS)
    config["attograd"] = {
        "source_counts": source_counts, "target_counts": target_counts,
        "metadata": {key: value for key, value in metadata.items() if carried(key)}}
    bundle = {"encoder": {}, "decoder": {}, "source_words": source_words,
              "target_words": target_words, "config": json.dumps(config)}
    for name, tensor in tensors.items():
        part, _, rest = name.partition(".")
        if part in ("encoder", "decoder"):
            bundle[part][rest] = tensor.clone()
        elif part != "optimizer":  # Adam's state stays behind
            raise BridgeError(f"{where}: tensor '{shown(name)}' belongs to neither the encoder "
                              "nor the decoder; the file was edited or damaged")
    check_recipe_config(config, checkpoint)
    recipe_model(bundle, config, checkpoint)  # proves the layout: strict=True
    paths.reads("the data file CHECKPOINT names", metadata.get("data")).check()
    buffer = io.BytesIO()
    torch.save(bundle, buffer)  # into memory: torch.save onto a full disk aborts the process
    write_atomic(out, buffer.getvalue())
    modules = ("Seq2SeqEncoder and Seq2SeqAttentionDecoder" if recipe == "batched" else
               "TransformerEncoder and TransformerDecoder")
    print(f"wrote {shown(out, 300)}: {modules} state dicts ({recipe} recipe, "
          f"{len(source_words)} and {len(target_words)} words)")


def recipe_from_torch(source, out, bundle, config, data_path, paths):
    where = shown(source, 300)
    check_recipe_config(config, source)
    check_words(bundle["source_words"], "source_words", source, BATCHED_SPECIALS)
    check_words(bundle["target_words"], "target_words", source, BATCHED_SPECIALS)
    model = recipe_model(bundle, config, source)
    extra = config.get("attograd", {})
    if not isinstance(extra, dict):
        raise BridgeError(f"{where}: config.attograd is not an object")
    source_counts = carried_back(extra, "source_counts", bundle["source_words"], source)
    target_counts = carried_back(extra, "target_counts", bundle["target_words"], source)
    entries = extra.get("metadata", {})
    if not isinstance(entries, dict) or not all(
            isinstance(key, str) and isinstance(value, str) and carried(key)
            for key, value in entries.items()):
        raise BridgeError(f"{where}: config.attograd.metadata is not an object of strings "
                          "(without the recipe, sizes, vocabularies, optimizer or resume entries)")
    metadata = {"data": data_path, **RECIPE_DEFAULTS, **entries, "recipe": config["recipe"]}
    if not metadata["data"] or metadata["direction"] not in ("eng-fra", "fra-eng"):
        raise BridgeError(f"{where}: config.attograd.metadata has data "
                          f"'{shown(metadata['data'])}' and direction "
                          f"'{shown(metadata['direction'])}'; expected a path and eng-fra or "
                          "fra-eng")
    for key, low, high in RECIPE_SIZES[config["recipe"]]:
        metadata[key] = str(config[key])
    metadata["num_steps"] = str(config["num_steps"])
    metadata["dropout"] = number_text(config["dropout"])
    metadata["source_vocabulary"] = vocabulary_text(bundle["source_words"], source_counts,
                                                    BATCHED_SPECIALS)
    metadata["target_vocabulary"] = vocabulary_text(bundle["target_words"], target_counts,
                                                    BATCHED_SPECIALS)
    tensors = {f"{part}.{name}": value for part in ("encoder", "decoder")
               for name, value in getattr(model, part).state_dict().items()}
    paths.reads("the data file SOURCE names", metadata["data"]).check()
    write_safetensors(out, tensors, metadata)
    print(f"wrote {shown(out, 300)}: {len(tensors)} tensors, a {config['recipe']} model")


def preprocess_d2l(line):
    """models/text/normalize.cpp's preprocess_d2l: no-break spaces become
    spaces, letters lower case, a space before , . ! ? that follows a non-space."""
    out, previous = [], None
    for character in line.replace("\u202f", " ").replace("\xa0", " ").lower():
        if character in ",.!?" and previous not in (None, " "):
            out.append(" ")
        out.append(character)
        previous = character
    return "".join(out)


def print_translation(words, log_prob, as_json):
    """One line: the words as `translate translate` prints them, or with --json
    {"words": [...], "log_prob": ...}."""
    print(json.dumps({"words": words, "log_prob": log_prob}) if as_json else " ".join(words))


def recipe_translate(bundle, config, source, as_json):
    model = recipe_model(bundle, config, source)
    index = {word: i for i, word in enumerate(bundle["source_words"])}
    num_steps = config["num_steps"]
    with torch.no_grad():
        for line in sys.stdin:
            words = preprocess_d2l(line.rstrip("\r\n")).split(" ")
            words = [word for word in words if word][:num_steps - 1]  # as `translate` cuts
            if not words:
                print_translation([], 0.0, as_json)
                continue
            ids = [index.get(word, UNK) for word in words] + [BATCHED_EOS]
            padded = torch.tensor([ids + [PAD] * (num_steps - len(ids))])
            chosen, log_prob = model.greedy(padded, len(ids), num_steps, BOS, BATCHED_EOS)
            print_translation([bundle["target_words"][i] for i in chosen], log_prob, as_json)


def bundle_recipe(bundle, path):
    """The recipe a bundle's config names, and the config: "tutorial" when it names none."""
    where = shown(path, 300)
    if not isinstance(bundle, dict):
        raise BridgeError(f"{where}: holds a {type(bundle).__name__}, not the dict to-torch "
                          "writes (docs/pytorch.md)")
    missing = [key for key in ("encoder", "decoder", "source_words", "target_words", "config")
               if key not in bundle]
    if missing:
        raise BridgeError(f"{where}: lacks {', '.join(missing)}; expected the layout "
                          "to-torch writes (docs/pytorch.md)")
    config = json_object(bundle["config"], path, "'config'")
    recipe = config.get("recipe", "tutorial")
    if recipe not in RECIPES:
        raise BridgeError(f"{where}: config recipe is '{shown(recipe)}'; expected one of "
                          f"{', '.join(RECIPES)}")
    return recipe, config


def to_torch(checkpoint, out, paths):
    tensors, metadata = read_safetensors(checkpoint)
    where = shown(checkpoint, 300)
    if is_gpt_checkpoint(metadata):
        return gpt_to_torch(checkpoint, out, tensors, metadata, paths)
    if metadata.get("recipe") in RECIPE_SIZES:
        return recipe_to_torch(checkpoint, out, tensors, metadata, paths)
    if metadata.get("seq2seq.format") != FORMAT:
        found = metadata.get("seq2seq.format", metadata.get("recipe", "missing"))
        raise BridgeError(f"{where}: not a translation checkpoint of any recipe (its format "
                          f"is '{shown(found)}', expected '{FORMAT}' or a recipe entry batched "
                          "or transformer); make one with `translate train`")
    model = metadata_json(metadata, "seq2seq.model", checkpoint)
    source_words, source_counts = words_of(
        metadata_entry(metadata, "seq2seq.source_vocabulary", checkpoint), checkpoint,
        "seq2seq.source_vocabulary")
    target_words, target_counts = words_of(
        metadata_entry(metadata, "seq2seq.target_vocabulary", checkpoint), checkpoint,
        "seq2seq.target_vocabulary")
    data = metadata_json(metadata, "seq2seq.data", checkpoint)
    entry = "the checkpoint's 'seq2seq.model' entry"
    hidden = checked(checkpoint, entry, model, "hidden_size", "int", 1, MAX_HIDDEN)
    length = checked(checkpoint, entry, model, "max_length", "int", 2, MAX_LENGTH)
    dropout = checked(checkpoint, entry, model, "dropout", "number", 0, 1)
    decoder = checked(checkpoint, entry, model, "decoder", "str")
    if decoder not in ("location", "bahdanau"):
        raise BridgeError(f"{where}: {entry}: decoder is '{shown(decoder)}'; expected "
                          "'location' or 'bahdanau'")
    reverse = checked(checkpoint, "the checkpoint's 'seq2seq.data' entry", data, "reverse", "bool")
    bundle = {"encoder": {}, "decoder": {}, "source_words": source_words,
              "target_words": target_words}
    for part, names in (("encoder", ENCODER_NAMES), ("decoder", decoder_names(decoder))):
        for ours, theirs in names.items():
            key = f"{part}.{ours}"
            if key not in tensors:
                raise BridgeError(f"{where}: tensor '{key}' is missing")
            bundle[part][theirs] = tensors[key].clone()
    if decoder == "bahdanau":
        for bias, weight in BAHDANAU_BIASES.items():
            bundle["decoder"][bias] = torch.zeros(bundle["decoder"][weight].shape[0])
    config = {
        "hidden_size": hidden, "max_length": length, "decoder": decoder, "dropout_p": dropout,
        # models/text/normalize.hpp's normalize_sentence, the tutorial's normalizeString.
        "normalization": "tutorial", "reverse": reverse,
        # What attograd needs back besides the weights (from-torch reuses it).
        "attograd": {"source_counts": source_counts, "target_counts": target_counts,
                     **{key: metadata[key] for key in
                        ("seq2seq.data", "seq2seq.training", "seq2seq.progress") if key in metadata}},
    }
    # A JSON string: a pickled float is what torch.load(weights_only=True) refuses.
    bundle["config"] = json.dumps(config)
    make_modules(bundle, config, checkpoint)  # proves the layout: strict=True
    named = data.get("path")
    paths.reads("the data file CHECKPOINT names", named if isinstance(named, str) else None).check()
    buffer = io.BytesIO()
    torch.save(bundle, buffer)  # into memory: torch.save onto a full disk aborts the process
    write_atomic(out, buffer.getvalue())
    print(f"wrote {shown(out, 300)}: EncoderRNN({len(source_words)}, {hidden}) and "
          f"{'AttnDecoderRNN' if decoder == 'location' else 'BahdanauAttnDecoderRNN'}"
          f"({hidden}, {len(target_words)}) state dicts")


def metadata_entry(metadata, key, path):
    if key not in metadata:
        raise BridgeError(f"{shown(path, 300)}: the checkpoint has no '{key}' entry; was it "
                          "written by `translate train`?")
    return metadata[key]


def carried_back(extra, key, words, path):
    """config.attograd's word counts for `words`, zeros when the bundle has none."""
    counts = extra.get(key)
    if counts is None:
        return [0] * len(words)
    if (not isinstance(counts, list) or len(counts) != len(words)
            or not all(is_integer(count) and 0 <= count < 2 ** 63 for count in counts)):
        raise BridgeError(f"{shown(path, 300)}: config.attograd.{key} is not a list of "
                          f"{len(words)} counts ≥ 0, one per word")
    return counts


def from_torch(source, out, data_path, paths):
    bundle = load_bundle(source)
    if is_gpt_bundle(bundle):
        return gpt_from_torch(source, out, bundle, data_path, paths)
    recipe, config = bundle_recipe(bundle, source)
    if recipe != "tutorial":
        return recipe_from_torch(source, out, bundle, config, data_path, paths)
    config = bundle_config(bundle, source)
    where = shown(source, 300)
    make_modules(bundle, config, source)
    tensors = {}
    for part, names in (("encoder", ENCODER_NAMES), ("decoder", decoder_names(config["decoder"]))):
        for ours, theirs in names.items():
            tensors[f"{part}.{ours}"] = bundle[part][theirs]
    if config["decoder"] == "bahdanau":
        inside = bundle["decoder"]["attention.Wa.bias"] + bundle["decoder"]["attention.Ua.bias"]
        if float(inside.abs().max()) != 0.0:
            raise BridgeError(f"{where}: the attention's Wa.bias + Ua.bias is not zero (largest "
                              f"{float(inside.abs().max()):.3g}); attograd's additive attention has "
                              "no bias inside tanh: train with Linear(..., bias=False) for Wa and Ua")
        # Va.bias adds one constant to every score, which softmax ignores.
    extra = config.get("attograd", {})
    if not isinstance(extra, dict):
        raise BridgeError(f"{where}: config.attograd is not an object")
    source_counts = carried_back(extra, "source_counts", bundle["source_words"], source)
    target_counts = carried_back(extra, "target_counts", bundle["target_words"], source)
    data = json_object(extra.get("seq2seq.data") or {
        "path": data_path, "reverse": bool(config.get("reverse", False)),
        "max_length": config["max_length"], "validation_fraction": 0.05, "split_seed": 1},
        source, "config.attograd's 'seq2seq.data'")
    training = json_object(extra.get("seq2seq.training") or {
        "iterations": 0, "learning_rate": 0.01, "teacher_forcing": 0.5, "seed": 0,
        "print_every": 1000, "plot_every": 100, "sparse_embeddings": False},
        source, "config.attograd's 'seq2seq.training'")
    progress = json_object(extra.get("seq2seq.progress") or {
        "iteration": 0, "print_loss_total": 0.0, "plot_loss_total": 0.0, "plot_losses": [],
        "interval_losses": [], "train_seconds": 0.0},
        source, "config.attograd's 'seq2seq.progress'")
    check_record(source, "config.attograd's 'seq2seq.data'", data, DATA_FIELDS)
    check_record(source, "config.attograd's 'seq2seq.training'", training, TRAINING_FIELDS)
    check_progress(source, "config.attograd's 'seq2seq.progress'", progress)
    if data["validation_fraction"] >= 1 or training["learning_rate"] <= 0:
        raise BridgeError(f"{where}: config.attograd's validation_fraction must be in [0, 1) and "
                          "learning_rate positive")
    if progress["iteration"] > training["iterations"]:
        raise BridgeError(f"{where}: config.attograd's progress is at iteration "
                          f"{progress['iteration']}, beyond the {training['iterations']} its "
                          "training record plans")
    metadata = {
        "seq2seq.format": FORMAT,
        "seq2seq.model": json.dumps({
            "source_vocabulary": len(bundle["source_words"]),
            "target_vocabulary": len(bundle["target_words"]),
            "hidden_size": config["hidden_size"], "max_length": config["max_length"],
            "dropout": config["dropout_p"], "decoder": config["decoder"]}),
        "seq2seq.source_vocabulary": vocabulary_text(bundle["source_words"], source_counts),
        "seq2seq.target_vocabulary": vocabulary_text(bundle["target_words"], target_counts),
        "seq2seq.data": json.dumps(data), "seq2seq.training": json.dumps(training),
        "seq2seq.progress": json.dumps(progress),
    }
    paths.reads("the data file SOURCE names", data["path"]).check()
    write_safetensors(out, tensors, metadata)
    print(f"wrote {shown(out, 300)}: {len(tensors)} tensors, a {config['decoder']} decoder")


def translate(source, as_json):
    bundle = load_bundle(source)
    if is_gpt_bundle(bundle):
        raise BridgeError(f"{shown(source, 300)}: a GPT bundle, not a translator; continue text "
                          "with `torch_bridge.py sample`")
    recipe, config = bundle_recipe(bundle, source)
    if recipe != "tutorial":
        return recipe_translate(bundle, config, source, as_json)
    config = bundle_config(bundle, source)
    encoder, decoder = make_modules(bundle, config, source)
    index = {word: i for i, word in enumerate(bundle["source_words"])}
    length = config["max_length"]
    for number, line in enumerate(sys.stdin, start=1):
        words = line.split()
        if len(words) + 1 > length:
            raise BridgeError(f"stdin line {number} ('{shown(line.strip(), 80)}') has "
                              f"{len(words) + 1} words with EOS; the model keeps at most {length}")
        ids = [index.get(word, 2) for word in words] + [EOS]
        chosen, log_prob = greedy(encoder, decoder, ids, length)
        print_translation([bundle["target_words"][i] for i in chosen], log_prob, as_json)


# --------------------------------------------------------------- the character GPT

# The bounds `gpt` holds a model to (models/gpt/gpt.cpp's check_options).
GPT_SIZES = [("block_size", "gpt.block", 1, 4096), ("n_layer", "gpt.layers", 1, 64),
             ("n_head", "gpt.heads", 1, 64), ("n_embd", "gpt.embd", 1, 8192)]
MAX_VOCABULARY = 1 << 16
# Entries from-torch writes when the bundle carries none (a GPT made in PyTorch):
# what `gpt train --resume` reads besides the sizes.
GPT_DEFAULTS = {"gpt.column": "-1", "gpt.batch": "12", "gpt.iters": "0", "gpt.seed": "0",
                "gpt.iteration": "0", "gpt.decay_iters": "0", "gpt.losses": "[]"}
# The entries the bundle itself holds (the characters and the sizes): not carried.
GPT_OWN = ("gpt.vocabulary",) + tuple(key for _, key, _, _ in GPT_SIZES)


def is_gpt_checkpoint(metadata):
    return "gpt.vocabulary" in metadata


def is_gpt_bundle(bundle):
    """Whether a loaded bundle claims to be a GPT's: a dict with 'model' and no encoder."""
    return isinstance(bundle, dict) and "model" in bundle and "encoder" not in bundle


def gpt_names(config):
    """The state-dict names -> shapes of nanoGPT's GPT for `config`,
    lm_head.weight (tied to transformer.wte.weight) included."""
    V, T, d = config["vocab_size"], config["block_size"], config["n_embd"]
    names = {"transformer.wte.weight": (V, d), "transformer.wpe.weight": (T, d)}
    for i in range(config["n_layer"]):
        block = f"transformer.h.{i}"
        for name, shape in (("ln_1", (d,)), ("attn.c_attn", (3 * d, d)), ("attn.c_proj", (d, d)),
                            ("ln_2", (d,)), ("mlp.c_fc", (4 * d, d)), ("mlp.c_proj", (d, 4 * d))):
            names[f"{block}.{name}.weight"] = shape
            if config["bias"]:
                names[f"{block}.{name}.bias"] = (shape[0],)
    names["transformer.ln_f.weight"] = (d,)
    if config["bias"]:
        names["transformer.ln_f.bias"] = (d,)
    names["lm_head.weight"] = (V, d)
    return names


def check_characters(characters, path, what):
    """The rules of gpt::Vocabulary: distinct characters (one code point each,
    valid UTF-8, no NUL) in code-point order, at most MAX_VOCABULARY."""
    where = shown(path, 300)
    if (not isinstance(characters, list) or not characters
            or not all(isinstance(c, str) and len(c) == 1 for c in characters)):
        raise BridgeError(f"{where}: {what} is not a non-empty list of one-character strings")
    if len(characters) > MAX_VOCABULARY:
        raise BridgeError(f"{where}: {what} has {len(characters)} characters, more than the "
                          f"{MAX_VOCABULARY} a GPT may have")
    for index, character in enumerate(characters):
        if character == "\0" or 0xD800 <= ord(character) <= 0xDFFF:
            raise BridgeError(f"{where}: {what}[{index}] is {shown(repr(character))}, not a "
                              "character of UTF-8 text")
        if index and characters[index - 1] >= character:
            raise BridgeError(f"{where}: {what} is not distinct characters in code-point order "
                              f"(at {index}: '{shown(characters[index - 1])}' then "
                              f"'{shown(character)}'); the file was edited or damaged")


def check_gpt_config(config, path, vocabulary):
    """The sizes of a GPT config, checked as gpt::check_options checks them."""
    where = shown(path, 300)
    checked(path, "'config'", config, "vocab_size", "int", 1, MAX_VOCABULARY)
    if config["vocab_size"] != vocabulary:
        raise BridgeError(f"{where}: config vocab_size {config['vocab_size']} but "
                          f"{vocabulary} characters; they must agree")
    for key, _, low, high in GPT_SIZES:
        checked(path, "'config'", config, key, "int", low, high)
    if config["n_embd"] % config["n_head"] != 0:
        raise BridgeError(f"{where}: config n_head {config['n_head']} does not divide n_embd "
                          f"{config['n_embd']}")
    checked(path, "'config'", config, "bias", "bool")
    dropout = checked(path, "'config'", config, "dropout", "number", 0, 1)
    if dropout >= 1:
        raise BridgeError(f"{where}: config dropout is {dropout}, not in [0, 1)")


def gpt_model(state, config, path):
    """nanoGPT's GPT of a checked config, `state` (names -> tensors) loaded with
    strict=True after its names, shapes and values are checked (so a config
    claiming huge sizes beside small tensors allocates nothing), in eval mode."""
    where = shown(path, 300)
    if not isinstance(state, dict) or not all(
            isinstance(name, str) and isinstance(value, torch.Tensor)
            for name, value in state.items()):
        raise BridgeError(f"{where}: 'model' is not a state dict (names to tensors)")
    expected = gpt_names(config)
    for name, shape in expected.items():
        found = state.get(name)
        if found is None or tuple(found.shape) != shape:
            raise BridgeError(f"{where}: model tensor '{name}' is "
                              f"{'missing' if found is None else list(found.shape)}; the config "
                              f"and the characters make it {list(shape)}")
    for name, value in state.items():
        if name not in expected:
            raise BridgeError(f"{where}: model tensor '{shown(name)}' is not one of nanoGPT's "
                              f"GPT{' with bias' if config['bias'] else ' (bias=False)'} "
                              "(scripts/torch_models.py)")
        if not value.is_floating_point():
            raise BridgeError(f"{where}: model tensor '{shown(name)}' holds {value.dtype}, not "
                              "floating-point numbers")
        if not bool(torch.isfinite(value).all()):
            raise BridgeError(f"{where}: model tensor '{shown(name)}' holds a NaN or an infinity; "
                              "the model diverged: use an earlier checkpoint")
    if not torch.equal(state["lm_head.weight"], state["transformer.wte.weight"]):
        raise BridgeError(f"{where}: lm_head.weight differs from transformer.wte.weight; the "
                          "GPT's head is tied to its embedding (one tensor), as nanoGPT's is")
    model = torch_models.GPT(config)
    load_strictly(model, state, "the model state dict", "GPT's", path)
    return model.eval()


def gpt_bundle(bundle, path):
    """(config, characters) of a checked GPT bundle."""
    where = shown(path, 300)
    missing = [key for key in ("model", "characters", "config") if key not in bundle]
    if missing:
        raise BridgeError(f"{where}: lacks {', '.join(missing)}; expected the GPT layout "
                          "to-torch writes (docs/pytorch.md)")
    config = json_object(bundle["config"], path, "'config'")
    if config.get("recipe") != "gpt":
        raise BridgeError(f"{where}: config recipe is '{shown(config.get('recipe'))}' beside a "
                          "'model' state dict; a GPT bundle's is 'gpt'")
    check_characters(bundle["characters"], path, "characters")
    check_gpt_config(config, path, len(bundle["characters"]))
    return config, bundle["characters"]


def gpt_to_torch(checkpoint, out, tensors, metadata, paths):
    where = shown(checkpoint, 300)
    characters = list(metadata["gpt.vocabulary"])
    check_characters(characters, checkpoint, "the checkpoint's gpt.vocabulary")
    config = {"recipe": "gpt", "vocab_size": len(characters)}
    for key, entry, low, high in GPT_SIZES:
        config[key] = metadata_int(metadata, entry, checkpoint, low, high)
    config["bias"] = "transformer.ln_f.bias" in tensors
    config["dropout"] = 0.0
    check_gpt_config(config, checkpoint, len(characters))
    config["attograd"] = {"metadata": {key: value for key, value in metadata.items()
                                       if key.startswith("gpt.") and key not in GPT_OWN}}
    state = {}
    for name, tensor in tensors.items():
        if not name.startswith("optimizer."):  # AdamW's state stays behind
            state[name] = tensor
    if "transformer.wte.weight" not in state:
        raise BridgeError(f"{where}: tensor 'transformer.wte.weight' is missing; was it written "
                          "by `gpt train`?")
    state["lm_head.weight"] = state["transformer.wte.weight"]
    model = gpt_model(state, config, checkpoint)  # proves the layout: strict=True
    bundle = {"model": model.state_dict(), "characters": characters,
              "config": json.dumps(config)}
    paths.reads("the data file CHECKPOINT names", metadata.get("gpt.data")).check()
    buffer = io.BytesIO()
    torch.save(bundle, buffer)  # into memory: torch.save onto a full disk aborts the process
    write_atomic(out, buffer.getvalue())
    print(f"wrote {shown(out, 300)}: nanoGPT's GPT state dict ({config['n_layer']} layers, "
          f"{config['n_head']} heads, n_embd {config['n_embd']}, block {config['block_size']}, "
          f"{len(characters)} characters; lm_head.weight tied to transformer.wte.weight)")


def gpt_metadata(config, characters, path, data_path):
    """The gpt.* entries of a checkpoint `gpt sample` (and `gpt train
    --resume`'s reader) takes, from the bundle's config."""
    where = shown(path, 300)
    extra = config.get("attograd", {})
    entries = extra.get("metadata", {}) if isinstance(extra, dict) else None
    if not isinstance(entries, dict) or not all(
            isinstance(key, str) and key.startswith("gpt.") and key not in GPT_OWN
            and isinstance(value, str) for key, value in entries.items()):
        raise BridgeError(f"{where}: config.attograd.metadata is not an object of gpt.* strings "
                          "(without the vocabulary and sizes, which the bundle holds)")
    metadata = {"gpt.data": data_path, **GPT_DEFAULTS, **entries}
    if data_path == "data/eng-fra.tsv" and "gpt.data" not in entries:
        metadata["gpt.column"] = "1"  # `gpt train`'s default text: the French side
    metadata["gpt.vocabulary"] = "".join(characters)
    for key, entry, _, _ in GPT_SIZES:
        metadata[entry] = str(config[key])
    return dict(sorted(metadata.items()))


def gpt_from_torch(source, out, bundle, data_path, paths):
    config, characters = gpt_bundle(bundle, source)
    if config["bias"]:
        raise BridgeError(f"{shown(source, 300)}: a GPT with biases (config bias true); `gpt` "
                          "builds nanoGPT's bias=False GPT, so train it with bias=False")
    model = gpt_model(bundle["model"], config, source)
    metadata = gpt_metadata(config, characters, source, data_path)
    tensors = {name: value for name, value in model.state_dict().items()
               if name != "lm_head.weight"}  # attograd's head is wte itself
    paths.reads("the data file SOURCE names", metadata["gpt.data"]).check()
    write_safetensors(out, tensors, metadata)
    print(f"wrote {shown(out, 300)}: {len(tensors)} tensors, a GPT for `gpt sample`")


def gpt_encode(text, characters, what):
    """The ids of `text`'s characters, as gpt::Vocabulary::encode (1-based position in errors)."""
    index = {character: i for i, character in enumerate(characters)}
    ids = []
    for position, character in enumerate(text, start=1):
        if character not in index:
            raise BridgeError(f"{what}: character {position} '{shown(character)}' is not in the "
                              f"model's vocabulary of {len(characters)} characters; use only "
                              "characters of the training text")
        ids.append(index[character])
    return ids


def gpt_sample(source, arguments):
    bundle = load_bundle(source)
    if not is_gpt_bundle(bundle):
        raise BridgeError(f"{shown(source, 300)}: not a GPT bundle (no 'model' state dict); "
                          "`sample` continues text with a GPT: make one with to-torch of a "
                          "`gpt train` checkpoint")
    config, characters = gpt_bundle(bundle, source)
    model = gpt_model(bundle["model"], config, source)
    prompt = gpt_encode(arguments.prompt, characters, "--prompt")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench",
                                    "reference"))
    from attograd_random import Generator
    ids = torch_models.gpt_sample(model, prompt, arguments.tokens, arguments.temperature,
                                  arguments.top_k, arguments.seed, Generator)
    text = arguments.prompt + "".join(characters[i] for i in ids) + "\n"
    sys.stdout.buffer.write(text.encode("utf-8"))  # UTF-8 whatever the locale, as `gpt sample`


def bounded(kind, low, high):
    """An argparse type: a `kind` number in [low, high]."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{shown(text, 60)}' is not a number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{shown(text, 60)} is outside [{low}, {high}]")
        return value
    return parse


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error and exit status 2."""

    def error(self, message):
        print(f"error: {self.prog}: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def main(argv):
    parser = Parser(prog="torch_bridge.py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    command = commands.add_parser("to-torch", help="attograd checkpoint -> torch.save bundle")
    command.add_argument("checkpoint", metavar="CHECKPOINT")
    command.add_argument("out", metavar="OUT",
                         help="the bundle; not CHECKPOINT nor the data file it names")
    command = commands.add_parser("from-torch", help="torch.save bundle -> attograd checkpoint")
    command.add_argument("source", metavar="SOURCE")
    command.add_argument("out", metavar="OUT", help="the checkpoint; not SOURCE, --data nor "
                                                    "the data file SOURCE names")
    command.add_argument("--data", default="data/eng-fra.tsv",
                         help="pairs `translate eval` scores by default, when the bundle does "
                              "not name them (default: data/eng-fra.tsv)")
    command = commands.add_parser("translate", help="greedy translation of stdin in PyTorch")
    command.add_argument("source", metavar="SOURCE")
    command.add_argument("--json", action="store_true",
                         help='one {"words": [...], "log_prob": ...} a line instead of the sentence')
    command = commands.add_parser("sample", help="a GPT bundle continues --prompt in PyTorch, "
                                                 "as `gpt sample` does")
    command.add_argument("source", metavar="SOURCE")
    # `gpt sample`'s flags, defaults and bounds (examples/gpt/gpt_commands.cpp).
    command.add_argument("--prompt", default="\n", help="text to continue (default: a newline)")
    command.add_argument("--tokens", type=bounded(int, 1, 1_000_000), default=500,
                         help="characters to add (default 500)")
    command.add_argument("--temperature", type=bounded(float, 1e-3, 100), default=0.8,
                         help="softmax temperature (default 0.8)")
    command.add_argument("--top-k", type=bounded(int, 0, 1 << 16), default=200,
                         help="draw from the K likeliest characters, 0 all (default 200)")
    command.add_argument("--seed", type=bounded(int, 0, 2 ** 63 - 1), default=1337,
                         help="seed of the draws (default 1337)")
    arguments = parser.parse_args(argv)
    try:
        # The paths first, then PyTorch: a wrong one is refused at once. The
        # data file an input names is checked once it is read, before writing.
        paths = PathsApart()
        if arguments.command == "to-torch":
            paths.reads("CHECKPOINT", arguments.checkpoint).writes("OUT", arguments.out).check()
            check_regular(arguments.checkpoint, "checkpoint")
            check_writable(arguments.out)
        else:
            if arguments.command == "from-torch":
                paths.reads("SOURCE", arguments.source).reads("--data", arguments.data)
                paths.writes("OUT", arguments.out).check()
            check_regular(arguments.source, "torch.save bundle")
            if arguments.command == "from-torch":
                check_writable(arguments.out)
        import_torch()
        if arguments.command == "to-torch":
            to_torch(arguments.checkpoint, arguments.out, paths)
        elif arguments.command == "from-torch":
            from_torch(arguments.source, arguments.out, arguments.data, paths)
        elif arguments.command == "sample":
            gpt_sample(arguments.source, arguments)
        else:
            translate(arguments.source, arguments.json)
    except (BridgeError, PathsClash) as error:
        print(f"error: {error.args[0]}", file=sys.stderr)
        return 2
    except OSError as error:  # reading stdin, writing stdout
        print(f"error: {arguments.command}: {shown(error.strerror or error, 300)}",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
