"""The textbook's Transformer recipe in plain PyTorch, one thread: the anchor
that `translate train --recipe transformer` is compared with.

It follows d2l.ai v0.17 ("Transformer", §10.7) step for step, except that it
reads the first 600 pairs, as attograd's recipe does (d2l's tokenize_nmt
reads 601): the same preprocessing, vocabularies, model, Xavier
initialisation, masked softmax cross-entropy, Adam, gradient clipping and
greedy prediction (which, as in the book, adds position 0's encoding at
every decoding step). Only the
training loop is timed. The model is here; the data, the training loop,
prediction and the report are d2l_common.py's, shared with batched.py.

    /usr/bin/python3 bench/reference/transformer.py [--data data/eng-fra.tsv] [--epochs 200] [--threads 1]

On --threads N (1 by default) for torch and for OpenBLAS, whose thread count
is its own and is read when torch loads it.

prints the loss every 10 epochs and one JSON line at the end with the final
loss, tokens/s, ms/epoch (wall and CPU time of the training loop) and the four
test translations with their BLEU.
"""
import math


from arguments import parse  # pylint: disable=wrong-import-order

# Before torch loads OpenBLAS, which reads OPENBLAS_NUM_THREADS then.
ARGS = parse(__doc__,
             ("--data", str, "data/eng-fra.tsv"),
             ("--epochs", int, 200),
             ("--seed", int, 0))
# pylint: disable=wrong-import-position
import torch
from torch import nn

from d2l_common import (EncoderDecoder, load_data, masked_softmax, report, train_seq2seq,
                        xavier_init_weights)


# ---------------------------------------------------------------- model (d2l §10.5–10.7)

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


def main():
    args = ARGS
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    num_steps = 10
    # The first 600 lines, as attograd's recipe reads them (d2l's tokenize_nmt reads 601).
    loader, src_vocab, tgt_vocab, pairs = load_data(args.data, 600, num_steps, 64)
    d, ffn_hiddens, heads, blocks, dropout = 32, 64, 4, 2, 0.1
    net = EncoderDecoder(TransformerEncoder(len(src_vocab), d, ffn_hiddens, heads, blocks, dropout),
                         TransformerDecoder(len(tgt_vocab), d, ffn_hiddens, heads, blocks, dropout))
    xavier_init_weights(net)
    trained = train_seq2seq(net, loader, tgt_vocab, args.epochs, 0.005)
    report(net, src_vocab, tgt_vocab, num_steps, pairs, args.epochs, trained)


if __name__ == "__main__":
    main()
