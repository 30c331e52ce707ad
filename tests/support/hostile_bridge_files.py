#!/usr/bin/env python3
"""Hostile inputs for scripts/torch_bridge.py, made from two good ones, and
the bridge's answer to each.

  hostile_bridge_files.py CHECKPOINT BUNDLE FOLDER

CHECKPOINT is a checkpoint of `translate train` (any recipe), BUNDLE its
`to-torch` bundle; the batched and Transformer recipes get their own cases.
Writes variants of each into FOLDER, runs the bridge's main() on each in this
process (one torch import for all), and writes FOLDER/cases.json, a list of
{"command": "to-torch" | "from-torch", "file": NAME, "expect": TEXT,
"status": main's exit status, "stderr": what it printed, "wrote": whether
OUT exists}: the bridge must refuse FILE with status 2 and one line holding
TEXT. The bundles that would run code (a `__reduce__` calling os.system)
would create FOLDER/pwned if they ran; the test checks it is never created
(and runs those two through the real command line as well).
tests/models/test_torch_bridge.cpp drives it.
"""
import contextlib
import copy
import io
import json
import os
import pickle
import struct
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import torch_bridge  # noqa: E402


def read_raw(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + length]), data[8 + length:]


def write_raw(path, header, body):
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)


class RunsCode:
    """Unpickling this calls os.system: what a .pt file someone sends can hold."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch '{self.marker}'",))


def main(checkpoint, bundle_path, folder):
    good = torch.load(bundle_path, weights_only=True)
    if "recipe" in json.loads(good["config"]):
        cases = recipe_cases(checkpoint, good, folder)
    else:
        cases = tutorial_cases(checkpoint, good, folder)
    run_cases(cases, folder)


def case_writers(cases, folder, checkpoint, good):
    """damaged(name, expect, edit): CHECKPOINT with edit(header) applied, a
    to-torch case; bundle(name, expect, value=None, edit=None, raw=None): the
    good bundle with edit(bundle) applied (or `value`, or the bytes `raw`), a
    from-torch case. Each writes FOLDER/name and adds its case to `cases`."""
    header, body = read_raw(checkpoint)

    def damaged(name, expect, edit):
        variant = copy.deepcopy(header)
        edit(variant)
        write_raw(os.path.join(folder, name), variant, body)
        cases.append({"command": "to-torch", "file": name, "expect": expect})

    def bundle(name, expect, value=None, edit=None, raw=None):
        path = os.path.join(folder, name)
        if raw is not None:
            with open(path, "wb") as f:
                f.write(raw)
        else:
            variant = copy.deepcopy(good) if value is None else value
            if edit is not None:
                edit(variant)
            torch.save(variant, path)
        cases.append({"command": "from-torch", "file": name, "expect": expect})

    return header, damaged, bundle


def tutorial_cases(checkpoint, good, folder):
    cases = []
    header, damaged, bundle = case_writers(cases, folder, checkpoint, good)
    first = next(name for name in header if name != "__metadata__")

    def set_entry(key, value):
        return lambda h: h.__setitem__(key, value)

    def set_model(key, value):
        def edit(h):
            model = json.loads(h["__metadata__"]["seq2seq.model"])
            model[key] = value
            h["__metadata__"]["seq2seq.model"] = json.dumps(model)
        return edit

    def set_metadata(key, value):
        return lambda h: h["__metadata__"].__setitem__(key, value)

    damaged("entry_number.safetensors", "is a JSON int, not an object", set_entry(first, 5))
    damaged("negative_shape.safetensors", "not a list of sizes",
            lambda h: h[first].__setitem__("shape", [-1, 5]))
    damaged("offsets_outside.safetensors", "data_offsets",
            lambda h: h[first].__setitem__("data_offsets", [0, 1 << 40]))
    damaged("metadata_list.safetensors", "'__metadata__' must be an object of strings",
            set_entry("__metadata__", ["a"]))
    damaged("model_string.safetensors", "is not a JSON object",
            set_metadata("seq2seq.model", json.dumps("hidden 8")))
    damaged("hidden_text.safetensors", "'hidden_size' is \"8\", not an integer",
            set_model("hidden_size", "8"))
    damaged("hidden_fraction.safetensors", "'hidden_size' is 8.5, not an integer",
            set_model("hidden_size", 8.5))
    damaged("decoder_unknown.safetensors", "decoder is 'xyz'", set_model("decoder", "xyz"))
    damaged("vocabulary_no_tab.safetensors", "not 'word<TAB>count'",
            lambda h: h["__metadata__"].__setitem__(
                "seq2seq.source_vocabulary",
                h["__metadata__"]["seq2seq.source_vocabulary"].replace("\t", " ", 4)))
    damaged("vocabulary_missing.safetensors", "has no 'seq2seq.target_vocabulary' entry",
            lambda h: h["__metadata__"].pop("seq2seq.target_vocabulary"))
    with open(os.path.join(folder, "header_too_long.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", 1 << 20) + b"{}")
    cases.append({"command": "to-torch", "file": "header_too_long.safetensors",
                  "expect": "not a safetensors file"})

    config = json.loads(good["config"])

    def with_config(**changes):
        def edit(variant):
            changed = copy.deepcopy(config)
            for key, value in changes.items():
                if value is None:
                    changed.pop(key)
                else:
                    changed[key] = value
            variant["config"] = json.dumps(changed)
        return edit

    def with_extra(key, value):
        def edit(variant):
            changed = copy.deepcopy(config)
            changed["attograd"][key] = value
            variant["config"] = json.dumps(changed)
        return edit

    marker = os.path.join(folder, "pwned")
    bundle("runs_code.pt", "refused: torch.load(weights_only=True) cannot read it",
           value={"encoder": RunsCode(marker)})
    bundle("runs_code_legacy.pt", "refused: torch.load(weights_only=True) cannot read it",
           raw=pickle.dumps({"encoder": RunsCode(marker)}))
    bundle("float_config.pt", "a Python float outside a tensor",
           edit=lambda v: v.__setitem__("config", config))
    bundle("not_a_dict.pt", "holds a list, not the dict to-torch writes", value=[1, 2])
    bundle("no_config.pt", "lacks config", edit=lambda v: v.pop("config"))
    bundle("config_not_json.pt", "'config' is not valid JSON",
           edit=lambda v: v.__setitem__("config", "{hidden"))
    bundle("config_list.pt", "'config' is not a JSON object",
           edit=lambda v: v.__setitem__("config", "[1]"))
    bundle("hidden_text.pt", "'hidden_size' is \"8\", not an integer",
           edit=with_config(hidden_size="8"))
    bundle("hidden_huge.pt", "'hidden_size' is 100000, not an integer in [1, 4096]",
           edit=with_config(hidden_size=100000))
    bundle("hidden_wrong.pt", "the config (hidden_size 16) and the words make it",
           edit=with_config(hidden_size=16))
    bundle("length_negative.pt", "'max_length' is -5", edit=with_config(max_length=-5))
    bundle("dropout_nan.pt", "'dropout_p' is NaN", edit=with_config(dropout_p=float("nan")))
    bundle("decoder_unknown.pt", "config decoder is 'gru'", edit=with_config(decoder="gru"))
    bundle("word_tab.pt", "source_words[5] is 'a\\tb'",
           edit=lambda v: v["source_words"].__setitem__(5, "a\tb"))
    bundle("word_newline.pt", "target_words[4] is 'a\\nb'",
           edit=lambda v: v["target_words"].__setitem__(4, "a\nb"))
    bundle("word_twice.pt", "source_words names 'je' twice",
           edit=lambda v: v["source_words"].__setitem__(4, "je"))
    bundle("no_specials.pt", "source_words must start ['SOS', 'EOS', '<unk>']",
           edit=lambda v: v["source_words"].__setitem__(2, "<pad>"))
    bundle("words_not_strings.pt", "target_words must be a list of strings",
           edit=lambda v: v["target_words"].__setitem__(3, 7))

    def poison(variant):
        variant["decoder"]["out.weight"][0, 0] = float("nan")
    bundle("nan_weight.pt", "holds a NaN or an infinity", edit=poison)

    def integer_tensor(variant):
        variant["encoder"]["gru.bias_ih_l0"] = variant["encoder"]["gru.bias_ih_l0"].to(torch.int64)
    bundle("integer_tensor.pt", "not floating-point numbers", edit=integer_tensor)
    bundle("state_not_dict.pt", "'decoder' is not a state dict",
           edit=lambda v: v.__setitem__("decoder", [1]))
    bundle("missing_tensor.pt", "the decoder state dict does not fit",
           edit=lambda v: v["decoder"].pop("out.bias"))
    bundle("data_not_json.pt", "'seq2seq.data' is not valid JSON",
           edit=with_extra("seq2seq.data", "{path"))
    bundle("data_reverse_text.pt", "'reverse' is \"no\", not a true or false",
           edit=with_extra("seq2seq.data", json.dumps({**json.loads(
               config["attograd"]["seq2seq.data"]), "reverse": "no"})))
    bundle("progress_negative.pt", "'iteration' is -5",
           edit=with_extra("seq2seq.progress", json.dumps({**json.loads(
               config["attograd"]["seq2seq.progress"]), "iteration": -5})))
    bundle("progress_beyond.pt", "beyond the",
           edit=with_extra("seq2seq.progress", json.dumps({**json.loads(
               config["attograd"]["seq2seq.progress"]), "iteration": 1 << 40})))
    bundle("fraction_one.pt", "validation_fraction must be in [0, 1)",
           edit=with_extra("seq2seq.data", json.dumps({**json.loads(
               config["attograd"]["seq2seq.data"]), "validation_fraction": 1})))
    bundle("seed_negative.pt", "'seed' is -1",
           edit=with_extra("seq2seq.training", json.dumps({**json.loads(
               config["attograd"]["seq2seq.training"]), "seed": -1})))
    bundle("counts_short.pt", "config.attograd.source_counts is not a list of",
           edit=with_extra("source_counts", [1, 2]))
    bundle("empty.pt", "refused: torch.load(weights_only=True) cannot read it", raw=b"")
    return cases


def recipe_cases(checkpoint, good, folder):
    """The cases of a batched or Transformer checkpoint and bundle."""
    cases = []
    _, damaged, bundle = case_writers(cases, folder, checkpoint, good)
    config = json.loads(good["config"])
    transformer = config["recipe"] == "transformer"
    width = "num_hiddens" if transformer else "hidden_size"
    depth = "num_blocks" if transformer else "num_layers"

    def set_metadata(key, value):
        return lambda h: h["__metadata__"].__setitem__(key, value)

    damaged("depth_text.safetensors", f"the checkpoint's {depth} is 'two', not an integer",
            set_metadata(depth, "two"))
    damaged("depth_huge.safetensors",
            f"the checkpoint's {depth} is '99', not an integer in [1, 16]",
            set_metadata(depth, "99"))
    damaged("dropout_text.safetensors", "the checkpoint's dropout is 'x', not a number in [0, 1)",
            set_metadata("dropout", "x"))
    damaged("steps_one.safetensors", "the checkpoint's num_steps is '1'",
            set_metadata("num_steps", "1"))
    damaged("vocabulary_damaged.safetensors", "'source_vocabulary' is not an attograd vocabulary",
            set_metadata("source_vocabulary", "words"))
    damaged("tutorial_specials.safetensors", "target_vocabulary must start ['<pad>'",
            set_metadata("target_vocabulary", "attograd-vocabulary 1\nspecial 3 unknown 2\n"
                         "words 3\nSOS\t0\nEOS\t0\n<unk>\t0\n"))
    damaged("no_vocabulary.safetensors", "the checkpoint has no 'source_vocabulary' entry",
            lambda h: h["__metadata__"].pop("source_vocabulary"))

    def stray_tensor(changed):
        name = next(key for key in changed if key != "__metadata__")
        changed["classifier.weight"] = changed.pop(name)
    damaged("stray_tensor.safetensors", "'classifier.weight' belongs to neither the encoder",
            stray_tensor)
    damaged("width_wrong.safetensors", "the config and the words make it",
            set_metadata(width, "24"))

    def with_config(**changes):
        def edit(variant):
            changed = copy.deepcopy(config)
            changed.update(changes)
            variant["config"] = json.dumps(changed)
        return edit

    def with_metadata(**entries):
        def edit(variant):
            changed = copy.deepcopy(config)
            changed["attograd"]["metadata"].update(entries)
            variant["config"] = json.dumps(changed)
        return edit

    marker = os.path.join(folder, "pwned")
    bundle("runs_code.pt", "refused: torch.load(weights_only=True) cannot read it",
           value={"encoder": RunsCode(marker)})
    bundle("recipe_unknown.pt", "config recipe is 'rnn'", edit=with_config(recipe="rnn"))
    bundle("width_text.pt", f"'{width}' is \"8\", not an integer", edit=with_config(**{width: "8"}))
    bundle("width_huge.pt", f"'{width}' is 100000, not an integer in [1, 4096]",
           edit=with_config(**{width: 100000}))
    bundle("width_wrong.pt", "the config and the words make it",
           edit=with_config(**{width: 2 * config[width]}))
    bundle("depth_more.pt", "is missing; the config and the words make it",
           edit=with_config(**{depth: config[depth] + 1}))
    bundle("steps_huge.pt", "'num_steps' is 100000, not an integer in [2, 512]",
           edit=with_config(num_steps=100000))
    bundle("dropout_one.pt", "config dropout is 1, not in [0, 1)", edit=with_config(dropout=1))
    if transformer:
        bundle("heads_not_dividing.pt", "does not divide num_hiddens",
               edit=with_config(num_heads=config["num_hiddens"] - 1))
    bundle("no_specials.pt", "source_words must start ['<pad>', '<bos>', '<eos>', '<unk>']",
           edit=lambda v: v["source_words"].__setitem__(0, "SOS"))
    bundle("word_twice.pt", "twice", edit=lambda v: v["target_words"].__setitem__(
        5, v["target_words"][4]))

    def poison(variant):
        variant["decoder"]["dense.weight"][0, 0] = float("nan")
    bundle("nan_weight.pt", "holds a NaN or an infinity", edit=poison)
    bundle("missing_tensor.pt", "the decoder state dict does not fit",
           edit=lambda v: v["decoder"].pop("dense.bias"))
    bundle("extra_tensor.pt", "the encoder state dict does not fit",
           edit=lambda v: v["encoder"].__setitem__("extra.weight", torch.zeros(2)))
    bundle("metadata_number.pt", "config.attograd.metadata is not an object of strings",
           edit=with_metadata(num_examples=600))
    bundle("metadata_resume.pt", "config.attograd.metadata is not an object of strings",
           edit=with_metadata(**{"resume.settings": "{}"}))
    bundle("metadata_optimizer.pt", "config.attograd.metadata is not an object of strings",
           edit=with_metadata(**{"attograd.optimizer": "Adam"}))
    bundle("direction_bad.pt", "direction 'en-fr'", edit=with_metadata(direction="en-fr"))

    def counts_short(variant):
        changed = copy.deepcopy(config)
        changed["attograd"]["source_counts"] = [1, 2]
        variant["config"] = json.dumps(changed)
    bundle("counts_short.pt", "config.attograd.source_counts is not a list of", edit=counts_short)
    return cases


def run_cases(cases, folder):
    out = os.path.join(folder, "out")
    for case in cases:
        errors = io.StringIO()
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            try:
                case["status"] = torch_bridge.main(
                    [case["command"], os.path.join(folder, case["file"]), out])
            except SystemExit as exit:
                case["status"] = exit.code
        case["stderr"] = errors.getvalue()
        case["wrote"] = os.path.exists(out)
    with open(os.path.join(folder, "cases.json"), "w") as f:
        json.dump(cases, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
