"""The textbook's Transformer recipe in plain PyTorch, one thread: the anchor
that `translate train --recipe transformer` is compared with.

It follows d2l.ai v0.17 ("Transformer", §10.7) step for step: the same
preprocessing, vocabularies, model, Xavier initialisation, masked softmax
cross-entropy, Adam, gradient clipping and greedy prediction (which, as in
the book, adds position 0's encoding at every decoding step). Only the
training loop is timed.

    /usr/bin/python3 bench/reference/transformer.py [--data data/eng-fra.tsv] [--epochs 200]

prints the loss every 10 epochs and one JSON line at the end with the final
loss, tokens/s, ms/epoch (wall and CPU time of the training loop) and the four
test translations with their BLEU.
"""
import argparse
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


def tokenize(text, num_examples):
    source, target = [], []
    for i, line in enumerate(text.split("\n")):
        if num_examples and i > num_examples:  # d2l's test: lines 0 … num_examples
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


# ---------------------------------------------------------------- model (d2l §10.3–10.7)

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


class DotProductAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


def transpose_qkv(x, num_heads):
    x = x.reshape(x.shape[0], x.shape[1], num_heads, -1).permute(0, 2, 1, 3)
    return x.reshape(-1, x.shape[2], x.shape[3])


def transpose_output(x, num_heads):
    x = x.reshape(-1, num_heads, x.shape[1], x.shape[2]).permute(0, 2, 1, 3)
    return x.reshape(x.shape[0], x.shape[1], -1)


class MultiHeadAttention(nn.Module):
    def __init__(self, num_hiddens, num_heads, dropout, bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    def forward(self, queries, keys, values, valid_lens):
        h = self.num_heads
        queries = transpose_qkv(self.W_q(queries), h)
        keys = transpose_qkv(self.W_k(keys), h)
        values = transpose_qkv(self.W_v(values), h)
        if valid_lens is not None:
            valid_lens = torch.repeat_interleave(valid_lens, repeats=h, dim=0)
        return self.W_o(transpose_output(self.attention(queries, keys, values, valid_lens), h))


class PositionalEncoding(nn.Module):
    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.P = torch.zeros((1, max_len, num_hiddens))
        angles = torch.arange(max_len, dtype=torch.float32).reshape(-1, 1) / torch.pow(
            10000, torch.arange(0, num_hiddens, 2, dtype=torch.float32) / num_hiddens)
        self.P[:, :, 0::2] = torch.sin(angles)
        self.P[:, :, 1::2] = torch.cos(angles)

    def forward(self, x):
        return self.dropout(x + self.P[:, :x.shape[1], :])


class PositionWiseFFN(nn.Module):
    def __init__(self, num_inputs, num_hiddens, num_outputs):
        super().__init__()
        self.dense1 = nn.Linear(num_inputs, num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.Linear(num_hiddens, num_outputs)

    def forward(self, x):
        return self.dense2(self.relu(self.dense1(x)))


class AddNorm(nn.Module):
    def __init__(self, normalized_shape, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(normalized_shape)

    def forward(self, x, y):
        return self.ln(self.dropout(y) + x)


class EncoderBlock(nn.Module):
    def __init__(self, d, ffn_hiddens, heads, dropout):
        super().__init__()
        self.attention = MultiHeadAttention(d, heads, dropout)
        self.addnorm1 = AddNorm([d], dropout)
        self.ffn = PositionWiseFFN(d, ffn_hiddens, d)
        self.addnorm2 = AddNorm([d], dropout)

    def forward(self, x, valid_lens):
        y = self.addnorm1(x, self.attention(x, x, x, valid_lens))
        return self.addnorm2(y, self.ffn(y))


class DecoderBlock(nn.Module):
    def __init__(self, d, ffn_hiddens, heads, dropout, i):
        super().__init__()
        self.i = i
        self.attention1 = MultiHeadAttention(d, heads, dropout)
        self.addnorm1 = AddNorm([d], dropout)
        self.attention2 = MultiHeadAttention(d, heads, dropout)
        self.addnorm2 = AddNorm([d], dropout)
        self.ffn = PositionWiseFFN(d, ffn_hiddens, d)
        self.addnorm3 = AddNorm([d], dropout)

    def forward(self, x, state):
        enc_outputs, enc_valid_lens = state[0], state[1]
        key_values = x if state[2][self.i] is None else torch.cat((state[2][self.i], x), 1)
        state[2][self.i] = key_values
        if self.training:
            batch_size, num_steps, _ = x.shape
            dec_valid_lens = torch.arange(1, num_steps + 1).repeat(batch_size, 1)
        else:
            dec_valid_lens = None
        y = self.addnorm1(x, self.attention1(x, key_values, key_values, dec_valid_lens))
        z = self.addnorm2(y, self.attention2(y, enc_outputs, enc_outputs, enc_valid_lens))
        return self.addnorm3(z, self.ffn(z)), state


class TransformerEncoder(nn.Module):
    def __init__(self, vocab_size, d, ffn_hiddens, heads, blocks, dropout):
        super().__init__()
        self.d = d
        self.embedding = nn.Embedding(vocab_size, d)
        self.pos_encoding = PositionalEncoding(d, dropout)
        self.blks = nn.Sequential()
        for i in range(blocks):
            self.blks.add_module("block" + str(i), EncoderBlock(d, ffn_hiddens, heads, dropout))

    def forward(self, x, valid_lens):
        x = self.pos_encoding(self.embedding(x) * math.sqrt(self.d))
        for blk in self.blks:
            x = blk(x, valid_lens)
        return x


class TransformerDecoder(nn.Module):
    def __init__(self, vocab_size, d, ffn_hiddens, heads, blocks, dropout):
        super().__init__()
        self.d, self.blocks = d, blocks
        self.embedding = nn.Embedding(vocab_size, d)
        self.pos_encoding = PositionalEncoding(d, dropout)
        self.blks = nn.Sequential()
        for i in range(blocks):
            self.blks.add_module("block" + str(i),
                                 DecoderBlock(d, ffn_hiddens, heads, dropout, i))
        self.dense = nn.Linear(d, vocab_size)

    def init_state(self, enc_outputs, enc_valid_lens):
        return [enc_outputs, enc_valid_lens, [None] * self.blocks]

    def forward(self, x, state):
        x = self.pos_encoding(self.embedding(x) * math.sqrt(self.d))
        for blk in self.blks:
            x, state = blk(x, state)
        return self.dense(x), state


class EncoderDecoder(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def forward(self, enc_x, dec_x, enc_valid_lens):
        state = self.decoder.init_state(self.encoder(enc_x, enc_valid_lens), enc_valid_lens)
        return self.decoder(dec_x, state)[0]


# ---------------------------------------------------------------- training and prediction

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


def predict(net, sentence, src_vocab, tgt_vocab, num_steps):
    net.eval()
    tokens = src_vocab.ids(sentence.lower().split(" ")) + [src_vocab.token_to_idx[EOS]]
    valid_len = torch.tensor([len(tokens)])
    tokens = (tokens + [src_vocab.token_to_idx[PAD]] * num_steps)[:num_steps]
    enc_outputs = net.encoder(torch.tensor([tokens]), valid_len)
    state = net.decoder.init_state(enc_outputs, valid_len)
    dec_x = torch.tensor([[tgt_vocab.token_to_idx[BOS]]])
    output = []
    for _ in range(num_steps):
        y, state = net.decoder(dec_x, state)  # position 0's encoding at every step, as d2l
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
        num_matches, label_subs = 0, collections.defaultdict(int)
        for i in range(len_label - n + 1):
            label_subs[" ".join(label_tokens[i:i + n])] += 1
        for i in range(len_pred - n + 1):
            if label_subs[" ".join(pred_tokens[i:i + n])] > 0:
                num_matches += 1
                label_subs[" ".join(pred_tokens[i:i + n])] -= 1
        score *= math.pow(num_matches / (len_pred - n + 1), math.pow(0.5, n))
    return score


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="data/eng-fra.tsv")
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)

    with open(args.data, encoding="utf-8") as f:
        source, target = tokenize(preprocess(f.read()), 600)
    src_vocab = Vocab(source, 2, [PAD, BOS, EOS])
    tgt_vocab = Vocab(target, 2, [PAD, BOS, EOS])
    num_steps = 10
    src, src_len = to_array(source, src_vocab, num_steps)
    tgt, tgt_len = to_array(target, tgt_vocab, num_steps)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(src, src_len, tgt, tgt_len), batch_size=64, shuffle=True)

    d, ffn_hiddens, heads, blocks, dropout = 32, 64, 4, 2, 0.1
    net = EncoderDecoder(TransformerEncoder(len(src_vocab), d, ffn_hiddens, heads, blocks, dropout),
                         TransformerDecoder(len(tgt_vocab), d, ffn_hiddens, heads, blocks, dropout))
    for module in net.modules():
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
    optimizer = torch.optim.Adam(net.parameters(), lr=0.005)
    net.train()
    seconds, cpu_seconds, tokens, loss = 0.0, 0.0, 0, 0.0
    for epoch in range(1, args.epochs + 1):
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

    translations = []
    for eng, fra in zip(["go .", "i lost .", "he's calm .", "i'm home ."],
                        ["va !", "j'ai perdu .", "il est calme .", "je suis chez moi ."]):
        output = predict(net, eng, src_vocab, tgt_vocab, num_steps)
        translations.append({"source": eng, "output": output, "bleu": bleu(output, fra, 2)})
        print(f"{eng} => {output}, bleu {translations[-1]['bleu']:.3f}")
    print(json.dumps({"final_loss": loss, "pairs": len(source), "epochs": args.epochs,
                      "tokens_per_second": tokens / seconds,
                      "ms_per_epoch": 1000 * seconds / args.epochs,
                      "cpu_ms_per_epoch": 1000 * cpu_seconds / args.epochs,
                      "translations": translations, "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
