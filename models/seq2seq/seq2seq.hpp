// models/seq2seq/seq2seq.hpp — the PyTorch seq2seq tutorial's translator: a GRU
// encoder and a GRU decoder with attention, one sentence at a time.
//
// Legend: S source length (the words plus EOS, S ≤ L), T decoder steps,
// L MAX_LENGTH (10), H hidden size (256), V_in / V_out the source / target
// vocabulary sizes.
//
//   Seq2Seq model(Seq2SeqOptions(V_in, V_out), generator);
//   EncoderOutput encoded = model.encoder->forward(source_ids);  // ids end in EOS
//   Tensor hidden = encoded.hidden;                              // (1,1,H)
//   AttentionMemory memory = model.decoder->remember(encoded);
//   DecoderStep step = model.decoder->forward(kSos, hidden, memory);
//   step.log_probs;   // (1,V_out)
//   step.hidden;      // (1,1,H), fed to the next step
//   step.attention;   // (1,L), each row sums to 1
//
// The encoder's output and the attention's memory are the forms both
// translators share (models/translation/encoder_decoder.hpp), with a batch of one:
// encoded.outputs is (1,L,H) and encoded.valid_lens is {S}.
//
// Two decoders share one interface (AttentionDecoder):
//
//   AttnDecoderRNN ("location", the tutorial's): the attention weights are a
//     learned function of the current input word and the decoder state only,
//     softmax(attn([embedded; hidden])) over all L slots — it scores *positions*,
//     never looks at what the encoder wrote there, and so also attends to the
//     zero rows after the source's end (as the tutorial does; it learns to
//     give them little weight).
//   BahdanauAttnDecoder: additive attention (Bahdanau et al., 2015; the layer
//     is nn::AdditiveAttention) — each encoder output is scored against the
//     decoder state, score_j = w_vᵀ tanh(W_q h + W_k e_j), and the padded
//     positions j ≥ S get weight exactly 0.
//
// Parameter names are PyTorch's (encoder.embedding.weight,
// encoder.gru.weight_ih_l0, decoder.attn.weight, decoder.attn_combine.weight,
// decoder.out.weight, …), so a state dict of the tutorial's model maps onto
// this one name for name.
//
// One file per part:
//
//   models/seq2seq/encoder.hpp            EncoderRNN
//   models/seq2seq/decoder.hpp            AttentionDecoder, the interface; DecoderStep
//   models/seq2seq/location_decoder.hpp   AttnDecoderRNN
//   models/seq2seq/bahdanau_decoder.hpp   BahdanauAttnDecoder
//   models/seq2seq/model.hpp              Seq2Seq (pair_loss, translate), its options, kSos / kEos
//   models/seq2seq/beam_decoder.hpp       beam_translate: beam search over either decoder
//   models/seq2seq/corpus.hpp             the tutorial's data (load_corpus), translate_sentence,
//                                         evaluate
//   models/seq2seq/training.hpp           Trainer (the tutorial's trainIters), checkpoints
#pragma once

#include "models/seq2seq/bahdanau_decoder.hpp"
#include "models/seq2seq/beam_decoder.hpp"
#include "models/seq2seq/decoder.hpp"
#include "models/seq2seq/encoder.hpp"
#include "models/seq2seq/location_decoder.hpp"
#include "models/seq2seq/model.hpp"
