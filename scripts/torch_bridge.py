#!/usr/bin/env python3
"""Move a translation model between attograd and PyTorch (docs/pytorch.md).

  torch_bridge.py to-torch CHECKPOINT OUT.pt
      An attograd checkpoint of `translate train` (tutorial recipe) becomes
      torch.save({'encoder': state_dict, 'decoder': state_dict,
                  'source_words': [...], 'target_words': [...], 'config': {...}}).
  torch_bridge.py from-torch IN.pt OUT.safetensors [--data PATH]
      The reverse: a model in that layout (trained with the PyTorch tutorial,
      say) becomes a checkpoint `translate translate` and `translate eval` use.
  torch_bridge.py translate IN.pt
      Greedy translation in PyTorch of each line of stdin (already normalised
      words), one JSON object a line: {"words": [...], "log_prob": ...}.

The state dicts load with strict=True into the classes below, which follow the
PyTorch tutorial "NLP From Scratch: Translation with a Sequence to Sequence
Network and Attention": EncoderRNN(len(source_words), H) and, for
--decoder location, the tutorial's AttnDecoderRNN(H, len(target_words),
dropout_p, max_length); for --decoder bahdanau, the newer tutorial's decoder
built on BahdanauAttention (BahdanauAttnDecoderRNN(H, len(target_words),
dropout_p) here, AttnDecoderRNN there). Word i of source_words / target_words
has id i: 0 SOS, 1 EOS, 2 <unk> (attograd's tutorial layout adds <unk>).

Needs Python 3 and torch; the only part of the project that uses PyTorch.
Exits 2 on bad input with a one-line "error: ..." message.
"""
import argparse
import json
import math
import struct
import sys

try:
    import torch
    from torch import nn
    import torch.nn.functional as F
except ImportError:  # the module still imports, so its tests can say "skipped"
    torch = None
    nn = None

FORMAT = "attograd-seq2seq 1"
VOCABULARY_MAGIC = "attograd-vocabulary 1"
SPECIALS = ["SOS", "EOS", "<unk>"]
SOS, EOS = 0, 1


class BridgeError(Exception):
    """Bad input: the message names the file and the remedy."""


# --------------------------------------------------------------- safetensors

def read_safetensors(path):
    """(OrderedDict name -> float32 tensor, metadata dict) of a safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise BridgeError(f"{path}: {len(data)} bytes long; a safetensors file starts with "
                          "an 8-byte header length")
    (header_length,) = struct.unpack("<Q", data[:8])
    if 8 + header_length > len(data):
        raise BridgeError(f"{path}: not a safetensors file (its first 8 bytes give a header of "
                          f"{header_length} bytes, but only {len(data) - 8} follow); pass a "
                          "checkpoint written by `translate train`")
    try:
        header = json.loads(data[8:8 + header_length])
    except ValueError as error:
        raise BridgeError(f"{path}: the header is not valid JSON ({error})") from None
    metadata = header.pop("__metadata__", {}) or {}
    body = memoryview(data)[8 + header_length:]
    tensors = {}
    for name, entry in sorted(header.items(), key=lambda item: item[1]["data_offsets"][0]):
        dtype = {"F32": torch.float32, "F64": torch.float64}.get(entry["dtype"])
        if dtype is None:
            raise BridgeError(f"{path}: tensor '{name}' has dtype {entry['dtype']}; "
                              "attograd writes F32 and F64 only")
        begin, end = entry["data_offsets"]
        values = torch.frombuffer(bytearray(body[begin:end]), dtype=dtype)
        tensors[name] = values.reshape(entry["shape"]).to(torch.float32)
    return tensors, metadata


def write_safetensors(path, tensors, metadata):
    """Writes float32 tensors in the given order, atomically (temporary file, rename)."""
    import os
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
    temporary = f"{path}.tmp.{os.getpid()}"
    try:
        with open(temporary, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except OSError as error:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise BridgeError(f"cannot write {path}: {error.strerror}") from None


# --------------------------------------------------------------- vocabularies

def words_of(text, path, key):
    """The words (id order) and counts of attograd's serialized vocabulary."""
    lines = text.split("\n")
    if lines[0] != VOCABULARY_MAGIC or not lines[1].startswith("special "):
        raise BridgeError(f"{path}: '{key}' is not an attograd vocabulary")
    count = int(lines[2].split()[1])
    entries = [line.rsplit("\t", 1) for line in lines[3:3 + count]]
    words = [word for word, _ in entries]
    if words[:3] != SPECIALS:
        raise BridgeError(f"{path}: '{key}' starts {words[:3]}, not the tutorial layout {SPECIALS}")
    return words, [int(number) for _, number in entries]


def vocabulary_text(words, counts):
    lines = [VOCABULARY_MAGIC, "special 3 unknown 2", f"words {len(words)}"]
    lines += [f"{word}\t{number}" for word, number in zip(words, counts)]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------- the tutorial's modules

if nn is not None:
    class EncoderRNN(nn.Module):
        """The tutorial's encoder: an embedding and a one-layer GRU, one word per call."""

        def __init__(self, input_size, hidden_size):
            super().__init__()
            self.hidden_size = hidden_size
            self.embedding = nn.Embedding(input_size, hidden_size)
            self.gru = nn.GRU(hidden_size, hidden_size)

        def forward(self, input, hidden):  # input: one id; hidden (1,1,H)
            embedded = self.embedding(input).view(1, 1, -1)
            return self.gru(embedded, hidden)

    class AttnDecoderRNN(nn.Module):
        """The tutorial's decoder: attention weights from a Linear over L positions."""

        def __init__(self, hidden_size, output_size, dropout_p=0.1, max_length=10):
            super().__init__()
            self.max_length = max_length
            self.embedding = nn.Embedding(output_size, hidden_size)
            self.attn = nn.Linear(hidden_size * 2, max_length)
            self.attn_combine = nn.Linear(hidden_size * 2, hidden_size)
            self.dropout = nn.Dropout(dropout_p)
            self.gru = nn.GRU(hidden_size, hidden_size)
            self.out = nn.Linear(hidden_size, output_size)

        # input: one id, hidden (1,1,H), encoder_outputs (L,H) -> (1,V), (1,1,H), (1,L)
        def forward(self, input, hidden, encoder_outputs, source_length):
            embedded = self.dropout(self.embedding(input).view(1, 1, -1))
            weights = F.softmax(self.attn(torch.cat((embedded[0], hidden[0]), 1)), dim=1)
            applied = torch.bmm(weights.unsqueeze(0), encoder_outputs.unsqueeze(0))
            output = F.relu(self.attn_combine(torch.cat((embedded[0], applied[0]), 1)).unsqueeze(0))
            output, hidden = self.gru(output, hidden)
            return F.log_softmax(self.out(output[0]), dim=1), hidden, weights

    class BahdanauAttention(nn.Module):
        """The newer tutorial's additive attention: Va·tanh(Wa·query + Ua·keys)."""

        def __init__(self, hidden_size):
            super().__init__()
            self.Wa = nn.Linear(hidden_size, hidden_size)
            self.Ua = nn.Linear(hidden_size, hidden_size)
            self.Va = nn.Linear(hidden_size, 1)

        def forward(self, query, keys):  # (1,1,H), (1,S,H) -> (1,1,H), (1,1,S)
            scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys))).squeeze(2).unsqueeze(1)
            weights = F.softmax(scores, dim=-1)
            return torch.bmm(weights, keys), weights

    class BahdanauAttnDecoderRNN(nn.Module):
        """The newer tutorial's AttnDecoderRNN (its forward_step, one word per call)."""

        def __init__(self, hidden_size, output_size, dropout_p=0.1):
            super().__init__()
            self.embedding = nn.Embedding(output_size, hidden_size)
            self.attention = BahdanauAttention(hidden_size)
            self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
            self.out = nn.Linear(hidden_size, output_size)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, input, hidden, encoder_outputs, source_length):
            embedded = self.dropout(self.embedding(input).view(1, 1, -1))
            keys = encoder_outputs[:source_length].unsqueeze(0)  # the real positions only
            context, weights = self.attention(hidden.permute(1, 0, 2), keys)
            output, hidden = self.gru(torch.cat((embedded, context), dim=2), hidden)
            return F.log_softmax(self.out(output[0]), dim=1), hidden, weights


def make_modules(bundle):
    """(encoder, decoder) of a bundle's config, with its state dicts loaded strictly."""
    config = bundle["config"]
    hidden, length = config["hidden_size"], config["max_length"]
    encoder = EncoderRNN(len(bundle["source_words"]), hidden)
    if config["decoder"] == "location":
        decoder = AttnDecoderRNN(hidden, len(bundle["target_words"]), config["dropout_p"], length)
    else:
        decoder = BahdanauAttnDecoderRNN(hidden, len(bundle["target_words"]), config["dropout_p"])
    encoder.load_state_dict(bundle["encoder"], strict=True)
    decoder.load_state_dict(bundle["decoder"], strict=True)
    return encoder.eval(), decoder.eval()


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
        raise BridgeError(f"{path}: the checkpoint has no '{key}' entry; was it written by "
                          "`translate train`?")
    return json.loads(metadata[key])


def to_torch(checkpoint, out):
    tensors, metadata = read_safetensors(checkpoint)
    if metadata.get("seq2seq.format") != FORMAT:
        found = metadata.get("seq2seq.format", metadata.get("recipe", "missing"))
        raise BridgeError(f"{checkpoint}: not a tutorial-recipe translation checkpoint (its format "
                          f"is '{found}', expected '{FORMAT}'); make one with `translate train`")
    model = metadata_json(metadata, "seq2seq.model", checkpoint)
    source_words, source_counts = words_of(metadata["seq2seq.source_vocabulary"], checkpoint,
                                           "seq2seq.source_vocabulary")
    target_words, target_counts = words_of(metadata["seq2seq.target_vocabulary"], checkpoint,
                                           "seq2seq.target_vocabulary")
    data = metadata_json(metadata, "seq2seq.data", checkpoint)
    bundle = {"encoder": {}, "decoder": {}, "source_words": source_words,
              "target_words": target_words}
    for part, names in (("encoder", ENCODER_NAMES), ("decoder", decoder_names(model["decoder"]))):
        for ours, theirs in names.items():
            key = f"{part}.{ours}"
            if key not in tensors:
                raise BridgeError(f"{checkpoint}: tensor '{key}' is missing")
            bundle[part][theirs] = tensors[key].clone()
    if model["decoder"] == "bahdanau":
        for bias, weight in BAHDANAU_BIASES.items():
            bundle["decoder"][bias] = torch.zeros(bundle["decoder"][weight].shape[0])
    bundle["config"] = {
        "hidden_size": model["hidden_size"], "max_length": model["max_length"],
        "decoder": model["decoder"], "dropout_p": model["dropout"],
        # models/text/normalize.hpp's normalize_sentence, the tutorial's normalizeString.
        "normalization": "tutorial", "reverse": data["reverse"],
        # What attograd needs back besides the weights (from-torch reuses it).
        "attograd": {"source_counts": source_counts, "target_counts": target_counts,
                     **{key: metadata[key] for key in
                        ("seq2seq.data", "seq2seq.training", "seq2seq.progress") if key in metadata}},
    }
    make_modules(bundle)  # proves the layout: strict=True
    torch.save(bundle, out)
    print(f"wrote {out}: EncoderRNN({len(source_words)}, {model['hidden_size']}) and "
          f"{'AttnDecoderRNN' if model['decoder'] == 'location' else 'BahdanauAttnDecoderRNN'}"
          f"({model['hidden_size']}, {len(target_words)}) state dicts")


def check_words(words, key, path):
    if not isinstance(words, list) or words[:3] != SPECIALS:
        raise BridgeError(f"{path}: {key} must be a list starting {SPECIALS} (id 0 SOS, 1 EOS, "
                          f"2 <unk>), found {words[:3] if isinstance(words, list) else type(words)}; "
                          "see docs/pytorch.md")
    if len(set(words)) != len(words):
        raise BridgeError(f"{path}: {key} names a word twice")


def from_torch(source, out, data_path):
    try:
        bundle = torch.load(source, map_location="cpu")
    except Exception as error:  # torch raises many types for a damaged file
        raise BridgeError(f"{source}: not a torch.save file ({error})") from None
    missing = [key for key in ("encoder", "decoder", "source_words", "target_words", "config")
               if not isinstance(bundle, dict) or key not in bundle]
    if missing:
        raise BridgeError(f"{source}: lacks {', '.join(missing)}; expected the layout "
                          "to-torch writes (docs/pytorch.md)")
    config = bundle["config"]
    for key in ("hidden_size", "max_length", "decoder", "dropout_p"):
        if key not in config:
            raise BridgeError(f"{source}: config lacks '{key}'")
    if config["decoder"] not in ("location", "bahdanau"):
        raise BridgeError(f"{source}: config decoder is '{config['decoder']}'; expected "
                          "'location' or 'bahdanau'")
    check_words(bundle["source_words"], "source_words", source)
    check_words(bundle["target_words"], "target_words", source)
    try:
        make_modules(bundle)
    except RuntimeError as error:
        raise BridgeError(f"{source}: the state dicts do not fit the tutorial's modules: "
                          f"{str(error).splitlines()[0]}") from None
    tensors = {}
    for part, names in (("encoder", ENCODER_NAMES), ("decoder", decoder_names(config["decoder"]))):
        for ours, theirs in names.items():
            tensors[f"{part}.{ours}"] = bundle[part][theirs]
    if config["decoder"] == "bahdanau":
        inside = bundle["decoder"]["attention.Wa.bias"] + bundle["decoder"]["attention.Ua.bias"]
        if float(inside.abs().max()) != 0.0:
            raise BridgeError(f"{source}: the attention's Wa.bias + Ua.bias is not zero (largest "
                              f"{float(inside.abs().max()):.3g}); attograd's additive attention has "
                              "no bias inside tanh: train with Linear(..., bias=False) for Wa and Ua")
        # Va.bias adds one constant to every score, which softmax ignores.
    extra = config.get("attograd", {})
    source_counts = extra.get("source_counts", [0] * len(bundle["source_words"]))
    target_counts = extra.get("target_counts", [0] * len(bundle["target_words"]))
    data = extra.get("seq2seq.data") or json.dumps({
        "path": data_path, "reverse": bool(config.get("reverse", False)),
        "max_length": config["max_length"], "validation_fraction": 0.05, "split_seed": 1})
    training = extra.get("seq2seq.training") or json.dumps({
        "iterations": 0, "learning_rate": 0.01, "teacher_forcing": 0.5, "seed": 0,
        "print_every": 1000, "plot_every": 100, "sparse_embeddings": False})
    progress = extra.get("seq2seq.progress") or json.dumps({
        "iteration": 0, "print_loss_total": 0.0, "plot_loss_total": 0.0, "plot_losses": [],
        "interval_losses": [], "train_seconds": 0.0})
    metadata = {
        "seq2seq.format": FORMAT,
        "seq2seq.model": json.dumps({
            "source_vocabulary": len(bundle["source_words"]),
            "target_vocabulary": len(bundle["target_words"]),
            "hidden_size": config["hidden_size"], "max_length": config["max_length"],
            "dropout": config["dropout_p"], "decoder": config["decoder"]}),
        "seq2seq.source_vocabulary": vocabulary_text(bundle["source_words"], source_counts),
        "seq2seq.target_vocabulary": vocabulary_text(bundle["target_words"], target_counts),
        "seq2seq.data": data, "seq2seq.training": training, "seq2seq.progress": progress,
    }
    write_safetensors(out, tensors, metadata)
    print(f"wrote {out}: {len(tensors)} tensors, a {config['decoder']} decoder")


def translate(source):
    bundle = torch.load(source, map_location="cpu")
    encoder, decoder = make_modules(bundle)
    index = {word: i for i, word in enumerate(bundle["source_words"])}
    length = bundle["config"]["max_length"]
    for line in sys.stdin:
        ids = [index.get(word, 2) for word in line.split()] + [EOS]
        if len(ids) > length:
            raise BridgeError(f"'{line.strip()}' has {len(ids)} words with EOS; the model keeps "
                              f"at most {length}")
        chosen, log_prob = greedy(encoder, decoder, ids, length)
        print(json.dumps({"words": [bundle["target_words"][i] for i in chosen],
                          "log_prob": log_prob}))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("to-torch", help="attograd checkpoint -> torch.save bundle")
    command.add_argument("checkpoint")
    command.add_argument("out")
    command = commands.add_parser("from-torch", help="torch.save bundle -> attograd checkpoint")
    command.add_argument("source")
    command.add_argument("out")
    command.add_argument("--data", default="data/eng-fra.tsv",
                         help="pairs `translate eval` scores by default, when the bundle does "
                              "not name them (default: data/eng-fra.tsv)")
    command = commands.add_parser("translate", help="greedy translation of stdin in PyTorch")
    command.add_argument("source")
    arguments = parser.parse_args(argv)
    if torch is None:
        print("error: torch is not installed for this interpreter; on Debian: "
              "apt-get install python3-torch", file=sys.stderr)
        return 2
    try:
        if arguments.command == "to-torch":
            to_torch(arguments.checkpoint, arguments.out)
        elif arguments.command == "from-torch":
            from_torch(arguments.source, arguments.out, arguments.data)
        else:
            translate(arguments.source)
    except (BridgeError, OSError, KeyError, ValueError) as error:
        message = error.args[0] if isinstance(error, BridgeError) else str(error)
        print(f"error: {message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
