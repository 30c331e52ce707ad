"""What d2l.ai v0.17's translation recipes share, in plain PyTorch: the data
pipeline of "Machine Translation and the Dataset" (§9.5), masked softmax
(§10.3), the encoder–decoder frame and train_seq2seq / predict_seq2seq /
bleu (§9.6–9.7). transformer.py and batched.py import it; torch must be
importable when they do (batched.py sets OPENBLAS_NUM_THREADS first).
"""
import collections
import json
import math
import time

import torch
from torch import nn

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"


# ---------------------------------------------------------------- data (d2l §9.5)

def preprocess(text):
    text = text.replace("\u202f", " ").replace("\xa0", " ").lower()
    chars = []
    for i, char in enumerate(text):
        if i > 0 and char in ",.!?" and text[i - 1] != " ":
            chars.append(" ")
        chars.append(char)
    return "".join(chars)


def tokenize(text, num_lines):
    """Source and target words of the pairs on the first num_lines lines."""
    source, target = [], []
    for i, line in enumerate(text.split("\n")):
        if i >= num_lines:
            break
        parts = line.split("\t")
        if len(parts) == 2:
            source.append(parts[0].split(" "))
            target.append(parts[1].split(" "))
    return source, target


class Vocab:
    def __init__(self, sentences, min_freq, reserved):
        counter = collections.Counter(token for line in sentences for token in line)
        self.idx_to_token = ["<unk>"] + reserved
        self.token_to_idx = {t: i for i, t in enumerate(self.idx_to_token)}
        for token, freq in sorted(counter.items(), key=lambda x: x[1], reverse=True):
            if freq >= min_freq and token not in self.token_to_idx:
                self.token_to_idx[token] = len(self.idx_to_token)
                self.idx_to_token.append(token)

    def __len__(self):
        return len(self.idx_to_token)

    def ids(self, tokens):
        return [self.token_to_idx.get(t, 0) for t in tokens]


def to_array(lines, vocab, num_steps):
    rows = []
    for line in lines:
        ids = (vocab.ids(line) + [vocab.token_to_idx[EOS]])[:num_steps]
        rows.append(ids + [vocab.token_to_idx[PAD]] * (num_steps - len(ids)))
    array = torch.tensor(rows)
    return array, (array != vocab.token_to_idx[PAD]).type(torch.int32).sum(1)


def load_data(path, num_lines, num_steps, batch_size):
    """d2l's load_data_nmt on the first num_lines lines of `path`: a shuffling
    loader of (source, source valid lengths, target, target valid lengths),
    both vocabularies (min frequency 2) and the number of pairs."""
    with open(path, encoding="utf-8") as f:
        source, target = tokenize(preprocess(f.read()), num_lines)
    src_vocab = Vocab(source, 2, [PAD, BOS, EOS])
    tgt_vocab = Vocab(target, 2, [PAD, BOS, EOS])
    src, src_len = to_array(source, src_vocab, num_steps)
    tgt, tgt_len = to_array(target, tgt_vocab, num_steps)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(src, src_len, tgt, tgt_len), batch_size=batch_size,
        shuffle=True)
    return loader, src_vocab, tgt_vocab, len(source)


# ---------------------------------------------------------------- attention and the frame (d2l §9.6, §10.3)

def sequence_mask(x, valid_len, value=0.0):
    mask = torch.arange(x.size(1), device=x.device)[None, :] < valid_len[:, None]
    x[~mask] = value
    return x


def masked_softmax(x, valid_lens):
    if valid_lens is None:
        return nn.functional.softmax(x, dim=-1)
    shape = x.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    x = sequence_mask(x.reshape(-1, shape[-1]), valid_lens, value=-1e6)
    return nn.functional.softmax(x.reshape(shape), dim=-1)


class EncoderDecoder(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def forward(self, enc_x, dec_x, enc_valid_lens):
        state = self.decoder.init_state(self.encoder(enc_x, enc_valid_lens), enc_valid_lens)
        return self.decoder(dec_x, state)[0]


# ---------------------------------------------------------------- training and prediction (d2l §9.7)

def xavier_init_weights(net):
    """Xavier-uniform weights for every Linear and every GRU weight matrix."""
    for module in net.modules():
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
        elif isinstance(module, nn.GRU):
            for name, parameter in module.named_parameters():
                if "weight" in name:
                    nn.init.xavier_uniform_(parameter)


def masked_cross_entropy(logits, label, valid_len):
    weights = sequence_mask(torch.ones_like(label), valid_len)
    unweighted = nn.functional.cross_entropy(logits.permute(0, 2, 1), label, reduction="none")
    return (unweighted * weights).mean(dim=1)


def clip_gradients(net, theta):
    params = [p for p in net.parameters() if p.requires_grad and p.grad is not None]
    norm = torch.sqrt(sum(torch.sum(p.grad ** 2) for p in params))
    if norm > theta:
        for p in params:
            p.grad[:] *= theta / norm


def train_seq2seq(net, loader, tgt_vocab, epochs, lr):
    """d2l's train_seq2seq (Adam, clipping to norm 1, the loss every 10 epochs):
    (final loss, target tokens, wall seconds, CPU seconds), timing the loop only."""
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    net.train()
    seconds, cpu_seconds, tokens, loss = 0.0, 0.0, 0, 0.0
    for epoch in range(1, epochs + 1):
        start, cpu_start = time.perf_counter(), time.process_time()
        loss_sum, epoch_tokens = 0.0, 0
        for x, x_len, y, y_len in loader:
            optimizer.zero_grad()
            bos = torch.tensor([tgt_vocab.token_to_idx[BOS]] * y.shape[0]).reshape(-1, 1)
            logits = net(x, torch.cat([bos, y[:, :-1]], 1), x_len)
            l = masked_cross_entropy(logits, y, y_len)
            l.sum().backward()
            clip_gradients(net, 1)
            optimizer.step()
            loss_sum += float(l.sum())
            epoch_tokens += int(y_len.sum())
        seconds += time.perf_counter() - start
        cpu_seconds += time.process_time() - cpu_start
        tokens += epoch_tokens
        loss = loss_sum / epoch_tokens
        if epoch % 10 == 0:
            print(f"epoch {epoch:4d}  loss {loss:.4f}", flush=True)
    return loss, tokens, seconds, cpu_seconds


def predict(net, sentence, src_vocab, tgt_vocab, num_steps):
    """d2l's predict_seq2seq: greedy, one token per decoder call (for the
    Transformer that adds position 0's encoding at every step, as the book does)."""
    net.eval()
    tokens = src_vocab.ids(sentence.lower().split(" ")) + [src_vocab.token_to_idx[EOS]]
    valid_len = torch.tensor([len(tokens)])
    tokens = (tokens + [src_vocab.token_to_idx[PAD]] * num_steps)[:num_steps]
    enc_outputs = net.encoder(torch.tensor([tokens]), valid_len)
    state = net.decoder.init_state(enc_outputs, valid_len)
    dec_x = torch.tensor([[tgt_vocab.token_to_idx[BOS]]])
    output = []
    for _ in range(num_steps):
        y, state = net.decoder(dec_x, state)
        dec_x = y.argmax(dim=2)
        token = int(dec_x.squeeze(0).item())
        if token == tgt_vocab.token_to_idx[EOS]:
            break
        output.append(token)
    return " ".join(tgt_vocab.idx_to_token[i] for i in output)


def bleu(prediction, label, k):
    pred_tokens, label_tokens = prediction.split(" "), label.split(" ")
    len_pred, len_label = len(pred_tokens), len(label_tokens)
    score = math.exp(min(0, 1 - len_label / len_pred))
    for n in range(1, k + 1):
        if len_pred < n:  # no n-grams to match (d2l divides by zero here), as attograd's bleu
            return 0.0
        num_matches, label_subs = 0, collections.defaultdict(int)
        for i in range(len_label - n + 1):
            label_subs[" ".join(label_tokens[i:i + n])] += 1
        for i in range(len_pred - n + 1):
            if label_subs[" ".join(pred_tokens[i:i + n])] > 0:
                num_matches += 1
                label_subs[" ".join(pred_tokens[i:i + n])] -= 1
        score *= math.pow(num_matches / (len_pred - n + 1), math.pow(0.5, n))
    return score


def report(net, src_vocab, tgt_vocab, num_steps, pairs, epochs, trained):
    """Translates d2l's four test sentences and prints the JSON line: final
    loss, target tokens/s and ms per epoch (wall and CPU) of the training loop."""
    loss, tokens, seconds, cpu_seconds = trained
    translations = []
    for eng, fra in zip(["go .", "i lost .", "he's calm .", "i'm home ."],
                        ["va !", "j'ai perdu .", "il est calme .", "je suis chez moi ."]):
        output = predict(net, eng, src_vocab, tgt_vocab, num_steps)
        translations.append({"source": eng, "output": output, "bleu": bleu(output, fra, 2)})
        print(f"{eng} => {output}, bleu {translations[-1]['bleu']:.3f}")
    print(json.dumps({"final_loss": loss, "pairs": pairs, "epochs": epochs,
                      "tokens_per_second": tokens / seconds,
                      "ms_per_epoch": 1000 * seconds / epochs,
                      "cpu_ms_per_epoch": 1000 * cpu_seconds / epochs,
                      "translations": translations, "threads": torch.get_num_threads()}))
