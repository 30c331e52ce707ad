#!/usr/bin/env python3
"""Train a tiny translator in PyTorch, as the tutorial does, and torch.save it
in scripts/torch_bridge.py's layout (for tests/models/test_torch_bridge.cpp).

  train_tiny_torch_model.py OUT.pt

The tutorial's loop: SGD, one pair per step, teacher forcing, NLL of every
target word; the tutorial's EncoderRNN and AttnDecoderRNN (torch_bridge.py
holds them). Seeded, so the model is the same on every run.
"""
import os
import json
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import torch  # noqa: E402
import torch_bridge  # noqa: E402
import torch_models  # noqa: E402

PAIRS = [("je suis fatigue .", "i am tired ."), ("il est grand .", "he is tall ."),
         ("je suis grand .", "i am tall ."), ("il est fatigue .", "he is tired .")]
HIDDEN, MAX_LENGTH, STEPS = 16, 6, 300


def main(out):
    torch.manual_seed(5)
    source_words = torch_bridge.SPECIALS + ["je", "suis", "fatigue", ".", "il", "est", "grand"]
    target_words = torch_bridge.SPECIALS + ["i", "am", "tired", ".", "he", "is", "tall"]
    encoder = torch_models.EncoderRNN(len(source_words), HIDDEN)
    decoder = torch_models.AttnDecoderRNN(HIDDEN, len(target_words), 0.1, MAX_LENGTH)
    optimizer = torch.optim.SGD(list(encoder.parameters()) + list(decoder.parameters()), lr=0.05)
    for step in range(STEPS):
        source, target = PAIRS[step % len(PAIRS)]
        source_ids = [source_words.index(w) for w in source.split()] + [torch_bridge.EOS]
        target_ids = [target_words.index(w) for w in target.split()] + [torch_bridge.EOS]
        optimizer.zero_grad()
        hidden = torch.zeros(1, 1, HIDDEN)
        outputs = torch.zeros(MAX_LENGTH, HIDDEN)
        for position, word in enumerate(source_ids):
            output, hidden = encoder(torch.tensor([word]), hidden)
            outputs[position] = output[0, 0]
        loss, word = 0, torch_bridge.SOS
        for expected in target_ids:
            log_probs, hidden, _ = decoder(torch.tensor([word]), hidden, outputs, len(source_ids))
            loss = loss + torch.nn.functional.nll_loss(log_probs, torch.tensor([expected]))
            word = expected
        loss.backward()
        optimizer.step()
    torch.save({"encoder": encoder.state_dict(), "decoder": decoder.state_dict(),
                "source_words": source_words, "target_words": target_words,
                # A JSON string: the bridge reads bundles with weights_only=True,
                # which refuses a pickled float.
                "config": json.dumps({"hidden_size": HIDDEN, "max_length": MAX_LENGTH,
                                      "decoder": "location", "dropout_p": 0.1,
                                      "normalization": "tutorial", "reverse": False})}, out)


if __name__ == "__main__":
    main(sys.argv[1])
