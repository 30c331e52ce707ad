// examples/translate/beam_flags.hpp — the decoding flags `translate
// translate` and `translate eval` share in both recipes: --beam K,
// --length-penalty α and --nbest (models/translation/beam_search.hpp has the
// search).
//
//   translate translate --beam 5 --nbest < sentences.txt
//   translate eval --beam 5 --length-penalty 1
//   translate eval --recipe batched --beam 5 --nbest --examples 3
//
// --beam 1, the default, is greedy decoding. With --nbest, translate prints
// the K best translations of each input line, one per output line, as
// tab-separated fields
//
//   <input line number> <rank, 1 = best> <score> <log-probability> <translation>
//
// and eval prints them under each example it shows.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "examples/common/cli.hpp"
#include "models/translation/beam_search.hpp"

namespace attograd::translate_beam {

struct BeamFlags {
  int64_t beam = 1;
  double length_penalty = 0.75;
  bool nbest = false;
};

// Binds --beam, --length-penalty and --nbest to `parser` (a command's parser).
void declare_beam_flags(cli::Parser& parser, BeamFlags& flags);

decoding::BeamSearchOptions beam_options(const BeamFlags& flags);

// "greedy decoding" or "beam search, K = 5, length penalty alpha = 0.75".
std::string describe(const BeamFlags& flags);

// translate --nbest: the K best of input line `line_number`, one line each.
void print_nbest_lines(std::ostream& out, int64_t line_number,
                       const std::vector<decoding::ScoredWords>& nbest);

// eval --nbest: the K best of an example, indented, one line each.
void print_nbest_block(std::ostream& out, const std::vector<decoding::ScoredWords>& nbest);

}  // namespace attograd::translate_beam
