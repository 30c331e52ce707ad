"""The textbook's Bahdanau-attention translator in plain PyTorch: the anchor
that `translate train --recipe batched` is compared with.

It follows d2l.ai v0.17 ("Bahdanau Attention", §10.4, trained by §9.7's
train_seq2seq): Seq2SeqEncoder (Embedding 32, 2-layer GRU with 32 hidden
units and dropout 0.1), Seq2SeqAttentionDecoder with AdditiveAttention,
Xavier-uniform Linear and GRU weights, masked softmax cross-entropy, Adam
(lr 0.005), gradients clipped to norm 1, batch 64, num_steps 10, English ->
French, and the same data pipeline as transformer.py (d2l_common.py).

Two changes make it the recipe as attograd implements it
(models/batched_seq2seq/batched_seq2seq.cpp, docs/attention.md):
  - 600 pairs, the first 600 lines; d2l's tokenize_nmt reads 601;
  - the encoder packs its batch (pack_padded_sequence), so a sentence's GRU
    stops at its own end: the decoder starts from the state after its
    <eos>, and padded positions have zero outputs. d2l runs the GRU over the
    <pad> ids too.
The rest is d2l's code, including what attograd computes differently but to
the same values (the keys' projection W_k is redone at every decoder step).

Only the training loop is timed (wall and CPU); tokens are the valid target
tokens, as attograd's train() counts them.

    nice -n 15 /usr/bin/python3 bench/reference/batched.py [--epochs 30] [--threads 1] [--seed 0]

prints the loss every 10 epochs, d2l's four test translations, and one JSON
line: final loss, tokens/s, ms per epoch (wall and CPU), the translations.
"""


from arguments import parse  # pylint: disable=wrong-import-order

# Before torch loads OpenBLAS, which reads OPENBLAS_NUM_THREADS then.
ARGS = parse(__doc__,
             ("--data", str, "data/eng-fra.tsv"),
             ("--epochs", int, 30),
             ("--seed", int, 0))
# pylint: disable=wrong-import-position
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from d2l_common import (EncoderDecoder, load_data, masked_softmax, report, train_seq2seq,
                        xavier_init_weights)


class AdditiveAttention(nn.Module):
    def __init__(self, key_size, query_size, num_hiddens, dropout):
        super().__init__()
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        queries, keys = self.W_q(queries), self.W_k(keys)
        features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class Seq2SeqEncoder(nn.Module):
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, dropout=dropout)

    def forward(self, x, valid_lens):
        x = self.embedding(x).permute(1, 0, 2)  # (T, B, E)
        packed = pack_padded_sequence(x, valid_lens, enforce_sorted=False)
        output, state = self.rnn(packed)
        return pad_packed_sequence(output, total_length=x.shape[0])[0], state


class Seq2SeqAttentionDecoder(nn.Module):
    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout):
        super().__init__()
        self.attention = AdditiveAttention(num_hiddens, num_hiddens, num_hiddens, dropout)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_state(self, enc_outputs, enc_valid_lens):
        outputs, hidden_state = enc_outputs
        return outputs.permute(1, 0, 2), hidden_state, enc_valid_lens

    def forward(self, x, state):
        enc_outputs, hidden_state, enc_valid_lens = state
        outputs = []
        for x_t in self.embedding(x).permute(1, 0, 2):
            query = hidden_state[-1].unsqueeze(1)
            context = self.attention(query, enc_outputs, enc_outputs, enc_valid_lens)
            x_t = torch.cat((context, x_t.unsqueeze(1)), dim=-1)
            out, hidden_state = self.rnn(x_t.permute(1, 0, 2), hidden_state)
            outputs.append(out)
        outputs = self.dense(torch.cat(outputs, dim=0))
        return outputs.permute(1, 0, 2), (enc_outputs, hidden_state, enc_valid_lens)


def main():
    torch.set_num_threads(ARGS.threads)
    torch.manual_seed(ARGS.seed)
    num_steps = 10
    loader, src_vocab, tgt_vocab, pairs = load_data(ARGS.data, 600, num_steps, 64)
    embed_size, num_hiddens, num_layers, dropout = 32, 32, 2, 0.1
    net = EncoderDecoder(
        Seq2SeqEncoder(len(src_vocab), embed_size, num_hiddens, num_layers, dropout),
        Seq2SeqAttentionDecoder(len(tgt_vocab), embed_size, num_hiddens, num_layers, dropout))
    xavier_init_weights(net)
    trained = train_seq2seq(net, loader, tgt_vocab, ARGS.epochs, 0.005)
    report(net, src_vocab, tgt_vocab, num_steps, pairs, ARGS.epochs, trained)


if __name__ == "__main__":
    main()
