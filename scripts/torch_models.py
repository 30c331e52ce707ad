"""PyTorch modules for the three recipes of `translate`.

scripts/torch_bridge.py loads the state dicts of its bundles into these
classes with strict=True; scripts/torch_finetune.py trains the batched and
Transformer ones. The tutorial recipe's are the PyTorch tutorial's, at the
end of the file. The batched and Transformer modules' layout
and parameter names are those of d2l.ai's PyTorch recipes ("Bahdanau
Attention" §11.4: Seq2SeqEncoder, Seq2SeqAttentionDecoder with
AdditiveAttention; "Transformer" §11.7: TransformerEncoder,
TransformerDecoder), and their maths is attograd's
(models/batched_seq2seq/, models/transformer/, nn/attention.hpp,
nn/transformer.hpp), so the same weights give the same outputs:

  * padding: a source row of valid length n reads only its first n ids. The
    GRU encoder stops at n (its outputs after n are zero, its final state is
    the state after id n, as pack_padded_sequence gives); attention gives the
    keys after n weight exactly 0 (a score of -inf, not d2l's -1e6).
  * the GRU's gates are stacked r, z, n in both; attograd's decoder input is
    [context ; embedding], context first, as d2l's.
  * the Transformer scales embeddings by √d, adds the sinusoidal table
    (computed in double, stored as float), scales dot products by √(d/h),
    uses LayerNorm eps 1e-5 and bias-free attention projections (d2l's
    use_bias=False); the decoder at step t sees the encoding of position t.
  * dropout is the only randomness; eval() turns it off.

bench/reference/ holds d2l's code as the textbook writes it, to time against;
these modules differ where attograd does (the masking, the positions above).

Legend: B batch, T time steps, S source positions, E embedding size, H hidden
size, L GRU layers, d num_hiddens, h heads, V vocabulary size.
"""
import math

import torch
from torch import nn
import torch.nn.functional as F


def valid_mask(valid_lens, rows, width):
    """(rows, width) bool: True where column < the row's valid length.

    valid_lens: (B) one per example, or (B·rows_per_example) one per query;
    rows = B·Tq (the rows of the flattened scores)."""
    lens = valid_lens.reshape(-1)
    if lens.numel() != rows:
        lens = lens.repeat_interleave(rows // lens.numel())
    return torch.arange(width, device=lens.device)[None, :] < lens[:, None]


def masked_softmax(scores, valid_lens):
    """Softmax over the last axis of (B,Tq,Tk) scores, keys at or after the
    valid length weighted exactly 0; valid_lens None means all keys count."""
    if valid_lens is None:
        return F.softmax(scores, dim=-1)
    B, Tq, Tk = scores.shape
    mask = valid_mask(valid_lens, B * Tq, Tk).reshape(B, Tq, Tk)
    return F.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


# ------------------------------------------------------------------ batched Bahdanau


class AdditiveAttention(nn.Module):
    """score(q, k) = w_vᵀ tanh(W_q q + W_k k), no biases (nn/attention.hpp)."""

    def __init__(self, key_size, query_size, num_hiddens, dropout):
        super().__init__()
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    # queries (B,Tq,q), keys (B,Tk,k), values (B,Tk,v), valid_lens (B) -> (B,Tq,v), (B,Tq,Tk)
    def forward(self, queries, keys, values, valid_lens):
        features = torch.tanh(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))
        weights = masked_softmax(self.w_v(features).squeeze(-1), valid_lens)
        return torch.bmm(self.dropout(weights), values), weights


class Seq2SeqEncoder(nn.Module):
    """Embedding(V_src, E) -> GRU(E, H, L layers); stops at each row's valid length."""

    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, dropout=dropout, batch_first=True)

    # ids (B,T), valid_lens (B) -> outputs (B,T,H) zero after each row's end, state (L,B,H)
    def forward(self, ids, valid_lens):
        packed = nn.utils.rnn.pack_padded_sequence(self.embedding(ids), valid_lens.cpu(),
                                                   batch_first=True, enforce_sorted=False)
        outputs, state = self.rnn(packed)
        outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True,
                                                      total_length=ids.shape[1])
        return outputs, state


class Seq2SeqAttentionDecoder(nn.Module):
    """One GRU step per target position on [context ; Embedding(y_{t−1})], the
    context pooled by additive attention with the top layer's state as query."""

    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout):
        super().__init__()
        self.attention = AdditiveAttention(num_hiddens, num_hiddens, num_hiddens, dropout)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout,
                          batch_first=True)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    # encoder outputs (B,S,H), state (L,B,H), source valid_lens (B) -> the decoder state
    def init_state(self, outputs, state, valid_lens):
        return [outputs, state, valid_lens]

    # ids (B,T), state -> logits (B,T,V_tgt); the state advances T steps
    def forward(self, ids, state):
        outputs, hidden, valid_lens = state
        steps = []
        for t in range(ids.shape[1]):
            query = hidden[-1].unsqueeze(1)  # (B,1,H)
            context, _ = self.attention(query, outputs, outputs, valid_lens)
            x = torch.cat((context, self.embedding(ids[:, t:t + 1])), dim=-1)  # (B,1,H+E)
            out, hidden = self.rnn(x, hidden)
            steps.append(out)
        state[1] = hidden
        return self.dense(torch.cat(steps, dim=1))


# ------------------------------------------------------------------ Transformer


def positional_table(max_len, num_hiddens):
    """(max_len,d): P[p,2i] = sin(p / 10000^(2i/d)), P[p,2i+1] = cos(…), in double, then float."""
    position = torch.arange(max_len, dtype=torch.float64)[:, None]
    even = (torch.arange(num_hiddens) // 2 * 2).to(torch.float64)
    angle = position / torch.pow(torch.tensor(10000.0, dtype=torch.float64), even / num_hiddens)
    table = torch.where(torch.arange(num_hiddens) % 2 == 0, torch.sin(angle), torch.cos(angle))
    return table.to(torch.float32)


class PositionalEncoding(nn.Module):
    """dropout(x + P[start : start + T]); P is a constant (not in the state dict)."""

    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("P", positional_table(max_len, num_hiddens), persistent=False)

    def forward(self, x, start=0):  # (B,T,d) -> (B,T,d)
        return self.dropout(x + self.P[start:start + x.shape[1]])


class MultiHeadAttention(nn.Module):
    """h scaled dot-product heads of size d/h on W_q, W_k, W_v projections, mixed by W_o."""

    def __init__(self, num_hiddens, num_heads, dropout, bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def split(self, x):  # (B,T,d) -> (B·h,T,d/h)
        B, T, _ = x.shape
        return x.reshape(B, T, self.num_heads, -1).permute(0, 2, 1, 3).reshape(B * self.num_heads,
                                                                               T, -1)

    # queries (B,Tq,d), keys/values (B,Tk,d), valid_lens (B) or (B,Tq) -> (B,Tq,d)
    def forward(self, queries, keys, values, valid_lens):
        B, Tq, d = queries.shape
        q, k, v = self.split(self.W_q(queries)), self.split(self.W_k(keys)), self.split(
            self.W_v(values))
        lens = None
        if valid_lens is not None:  # every head of an example uses the example's lengths
            lens = valid_lens.reshape(B, -1).repeat_interleave(self.num_heads, dim=0)
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1])
        pooled = torch.bmm(self.dropout(masked_softmax(scores, lens)), v)  # (B·h,Tq,d/h)
        joined = pooled.reshape(B, self.num_heads, Tq, -1).permute(0, 2, 1, 3).reshape(B, Tq, d)
        return self.W_o(joined)


class PositionWiseFFN(nn.Module):
    def __init__(self, num_hiddens, ffn_num_hiddens):
        super().__init__()
        self.dense1 = nn.Linear(num_hiddens, ffn_num_hiddens)
        self.dense2 = nn.Linear(ffn_num_hiddens, num_hiddens)

    def forward(self, x):
        return self.dense2(F.relu(self.dense1(x)))


class AddNorm(nn.Module):
    """LayerNorm(dropout(y) + x), eps 1e-5."""

    def __init__(self, num_hiddens, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(num_hiddens, eps=1e-5)

    def forward(self, x, y):
        return self.ln(self.dropout(y) + x)


class TransformerEncoderBlock(nn.Module):
    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout):
        super().__init__()
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout)

    def forward(self, x, valid_lens):
        y = self.addnorm1(x, self.attention(x, x, x, valid_lens))
        return self.addnorm2(y, self.ffn(y))


class TransformerDecoderBlock(nn.Module):
    """Causal self-attention, attention over the encoder's output, FFN."""

    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout):
        super().__init__()
        self.attention1 = MultiHeadAttention(num_hiddens, num_heads, dropout)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.attention2 = MultiHeadAttention(num_hiddens, num_heads, dropout)
        self.addnorm2 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_num_hiddens)
        self.addnorm3 = AddNorm(num_hiddens, dropout)

    # x (B,T,d) at positions 0 … T−1, encoder outputs (B,S,d), source valid_lens (B)
    def forward(self, x, encoder_outputs, encoder_lens):
        B, T, _ = x.shape
        causal = torch.arange(1, T + 1, device=x.device).repeat(B, 1)  # query q sees 0 … q
        y = self.addnorm1(x, self.attention1(x, x, x, causal))
        z = self.addnorm2(y, self.attention2(y, encoder_outputs, encoder_outputs, encoder_lens))
        return self.addnorm3(z, self.ffn(z))


class BlockStack(nn.Module):
    """What encoder and decoder share: embedding, positional encoding, and N
    blocks named block0 … block{N−1} in `blks` (d2l's nn.Sequential)."""

    def __init__(self, Block, vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blocks,
                 dropout, max_len=1000):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout, max_len)
        self.blks = nn.Sequential()
        for i in range(num_blocks):
            self.blks.add_module(f"block{i}",
                                 Block(num_hiddens, ffn_num_hiddens, num_heads, dropout))

    def embed(self, ids):  # (B,T) -> PositionalEncoding(Embedding(ids) · √d) (B,T,d)
        return self.pos_encoding(self.embedding(ids) * math.sqrt(self.num_hiddens))


class TransformerEncoder(BlockStack):
    def __init__(self, vocab_size, *sizes):
        super().__init__(TransformerEncoderBlock, vocab_size, *sizes)

    def forward(self, ids, valid_lens):  # (B,S), (B) -> (B,S,d)
        x = self.embed(ids)
        for block in self.blks:
            x = block(x, valid_lens)
        return x


class TransformerDecoder(BlockStack):
    def __init__(self, vocab_size, *sizes):
        super().__init__(TransformerDecoderBlock, vocab_size, *sizes)
        self.dense = nn.Linear(self.num_hiddens, vocab_size)

    # The whole target prefix at once, each position attending to itself and
    # those before it: ids (B,T), encoder outputs (B,S,d), valid_lens (B) -> (B,T,V_tgt)
    def forward(self, ids, encoder_outputs, valid_lens):
        y = self.embed(ids)
        for block in self.blks:
            y = block(y, encoder_outputs, valid_lens)
        return self.dense(y)


# ------------------------------------------------------------------ whole models


def greedy(next_logits, num_steps, bos, eos):
    """(chosen ids without EOS, Σ log p of every chosen id, EOS included):
    at most num_steps steps, each choosing the likeliest id of
    next_logits(ids so far, <bos> first) -> (V_tgt) logits."""
    prefix, log_prob = [bos], 0.0
    for _ in range(num_steps):
        logits = next_logits(prefix)
        word = int(logits.argmax())
        log_prob += float(F.log_softmax(logits, dim=0)[word])
        if word == eos:
            break
        prefix.append(word)
    return prefix[1:], log_prob


class BatchedSeq2Seq(nn.Module):
    """encoder + decoder, d2l's EncoderDecoder, for the batched Bahdanau recipe."""

    def __init__(self, config, source_size, target_size):
        super().__init__()
        sizes = (config["embed_size"], config["hidden_size"], config["num_layers"],
                 config["dropout"])
        self.encoder = Seq2SeqEncoder(source_size, *sizes)
        self.decoder = Seq2SeqAttentionDecoder(target_size, *sizes)

    # source (B,S), valid_lens (B), decoder inputs (B,T) -> logits (B,T,V_tgt)
    def forward(self, source, valid_lens, decoder_inputs):
        outputs, state = self.encoder(source, valid_lens)
        return self.decoder(decoder_inputs, self.decoder.init_state(outputs, state, valid_lens))

    def greedy(self, source, valid_length, num_steps, bos, eos):
        """greedy() for one (1,S) source, one decoder step at a time as attograd's predict."""
        lens = torch.tensor([valid_length])
        outputs, state = self.encoder(source, lens)
        state = self.decoder.init_state(outputs, state, lens)
        return greedy(lambda prefix: self.decoder(torch.tensor([prefix[-1:]]), state)[0, 0],
                      num_steps, bos, eos)


class Transformer(nn.Module):
    """encoder + decoder, d2l's EncoderDecoder, for the Transformer recipe."""

    def __init__(self, config, source_size, target_size):
        super().__init__()
        sizes = (config["num_hiddens"], config["ffn_num_hiddens"], config["num_heads"],
                 config["num_blocks"], config["dropout"], config.get("max_len", 1000))
        self.encoder = TransformerEncoder(source_size, *sizes)
        self.decoder = TransformerDecoder(target_size, *sizes)

    def forward(self, source, valid_lens, decoder_inputs):
        return self.decoder(decoder_inputs, self.encoder(source, valid_lens), valid_lens)

    def greedy(self, source, valid_length, num_steps, bos, eos):
        """greedy() for one (1,S) source; step t recomputes the prefix 0 … t with
        the causal mask, which equals attograd's cached one-token steps."""
        lens = torch.tensor([valid_length])
        encoded = self.encoder(source, lens)
        return greedy(lambda prefix: self.decoder(torch.tensor([prefix]), encoded, lens)[0, -1],
                      num_steps, bos, eos)


MODELS = {"batched": BatchedSeq2Seq, "transformer": Transformer}


# ------------------------------------------------------------------ the tutorial recipe
# The PyTorch tutorial "NLP From Scratch: Translation with a Sequence to
# Sequence Network and Attention" (EncoderRNN, AttnDecoderRNN; the newer
# version's BahdanauAttention): one word per call, as the tutorial runs them.

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


# ------------------------------------------------------------------ the character GPT
# nanoGPT's model.py (Karpathy) in its module layout and parameter names, with
# attograd's maths (models/gpt/gpt.hpp), so the same weights give the same
# logits (to float rounding):
#
#   x = wte[ids] + wpe[0..T)                                      (B,T,d)
#   L × Block:  x = x + attn(ln_1(x));  x = x + mlp(ln_2(x))
#   logits = lm_head(ln_f(x)),  lm_head.weight IS transformer.wte.weight (B,T,V)
#
#   * the head is tied as nanoGPT ties it (`self.transformer.wte.weight =
#     self.lm_head.weight`), so state_dict() has both keys and one tensor;
#   * GELU is the tanh form (attograd's; nanoGPT's current MLP uses the erf
#     form nn.GELU(), its first version the tanh one): nn.GELU(approximate="tanh");
#   * LayerNorm eps 1e-5, weight always, bias only with bias=True (nanoGPT's
#     LayerNorm class); every Linear has a bias only with bias=True;
#   * attention scores q kᵀ · 1/√(d/h), keys after the query at -inf. The causal
#     mask is made per call, not nanoGPT's registered buffer `attn.bias` (which
#     nanoGPT's own loader drops), so state_dict() holds the weights only;
#   * dropout is 0 in attograd; the modules keep nanoGPT's Dropout slots.
#
# Legend as models/gpt/gpt.hpp: B batch, T positions (≤ block), V vocabulary,
# d n_embd, h n_head, L n_layer.


class GPTLayerNorm(nn.Module):
    """nanoGPT's LayerNorm: F.layer_norm with eps 1e-5 and an optional bias."""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, bias, dropout=0.0):
        super().__init__()
        self.n_head, self.n_embd = n_head, n_embd
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)  # queries, keys, values
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x):  # (B,T,d) -> (B,T,d)
        B, T, d = x.shape
        h = self.n_head
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (part.view(B, T, h, d // h).transpose(1, 2) for part in (q, k, v))  # (B,h,T,d/h)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h))
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        weights = self.attn_dropout(F.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1))
        y = (weights @ v).transpose(1, 2).contiguous().view(B, T, d)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, n_embd, bias, dropout=0.0):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, bias, dropout=0.0):
        super().__init__()
        self.ln_1 = GPTLayerNorm(n_embd, bias)
        self.attn = CausalSelfAttention(n_embd, n_head, bias, dropout)
        self.ln_2 = GPTLayerNorm(n_embd, bias)
        self.mlp = MLP(n_embd, bias, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's GPT. config: vocab_size, block_size, n_layer, n_head, n_embd,
    bias (default False), dropout (default 0)."""

    def __init__(self, config):
        super().__init__()
        self.block_size = config["block_size"]
        d, bias, dropout = config["n_embd"], config.get("bias", False), config.get("dropout", 0.0)
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config["vocab_size"], d),
            wpe=nn.Embedding(config["block_size"], d),
            drop=nn.Dropout(dropout),
            h=nn.ModuleList([Block(d, config["n_head"], bias, dropout)
                             for _ in range(config["n_layer"])]),
            ln_f=GPTLayerNorm(d, bias)))
        self.lm_head = nn.Linear(d, config["vocab_size"], bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied, as nanoGPT ties them

    def forward(self, ids):  # ids (B,T), T ≤ block_size -> logits (B,T,V)
        T = ids.shape[1]
        positions = torch.arange(T, device=ids.device)
        x = self.transformer.drop(self.transformer.wte(ids) + self.transformer.wpe(positions))
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


def gpt_draw(logits, temperature, top_k, uniform):
    """models/gpt/sample.cpp's draw(): the id drawn from (V) float logits with
    `uniform` in [0, 1): softmax(logits / temperature) over the top_k largest
    (all with top_k 0), largest first with ties by id, inverted at `uniform`.
    The weights and their sum are doubles, as there."""
    z = [float(value) for value in logits.tolist()]
    kept = min(top_k, len(z)) if top_k > 0 else len(z)
    order = sorted(range(len(z)), key=lambda i: (-z[i], i))[:kept]
    largest = z[order[0]]
    weights = [math.exp((z[i] - largest) / temperature) for i in order]
    total = 0.0
    for weight in weights:  # summed in this order, as the C++ loop sums
        total += weight
    target = uniform * total
    for i, weight in zip(order, weights):
        target -= weight
        if target < 0:
            return i
    return order[-1]


def gpt_sample(model, prompt, tokens, temperature, top_k, seed, generator_class):
    """models/gpt/sample.cpp's sample(): the `tokens` ids after `prompt` (ids),
    one uniform of attograd's Generator(seed) per character
    (bench/reference/attograd_random.py's Generator is `generator_class`).

    The window is the ids since the last restart, at most block_size; when
    full, it restarts at its last ⌊block/2⌋ (at least 1) ids, the new one
    last. attograd reads a window through its KV cache, this recomputes the
    window: the same contexts, so the same logits to float rounding."""
    block = model.block_size
    keep = max(1, block // 2)
    generator = generator_class(seed)
    window = list(prompt[-block:])
    out = []
    model.eval()
    with torch.no_grad():
        logits = model(torch.tensor([window]))[0, -1]
        for n in range(tokens):
            next_id = gpt_draw(logits, temperature, top_k, generator.uniform())
            out.append(next_id)
            if n + 1 == tokens:
                break
            if len(window) == block:
                window = window[len(window) - (keep - 1):] + [next_id]
            else:
                window.append(next_id)
            logits = model(torch.tensor([window]))[0, -1]
    return out
