// examples/translate/beam_flags.cpp — the decoding flags and the n-best
// printing of translate and eval (see beam_flags.hpp).
#include "examples/translate/beam_flags.hpp"

#include <fmt/format.h>

#include <ostream>

#include "examples/translate/shown_text.hpp"
#include "examples/translate/size_limits.hpp"
#include "models/text/normalize.hpp"

namespace attograd::translate_beam {

void declare_beam_flags(cli::Parser& parser, BeamFlags& flags) {
  parser
      .flag("beam", flags.beam,
            "beam size K: keep the K best partial translations per step (1: greedy decoding)",
            cli::size_at_most(kMaxBeam))
      .flag("length-penalty", flags.length_penalty,
            "alpha of the beam's length penalty: finished translations are ranked by "
            "(1/L^alpha) * sum log p over their L words, EOS included",
            cli::non_negative())
      .flag("nbest", flags.nbest,
            "print the K best translations with their scores (translate: one per line, "
            "tab-separated: input line, rank, score, log-probability, translation)");
}

decoding::BeamSearchOptions beam_options(const BeamFlags& flags) {
  return decoding::BeamSearchOptions().beam_size(flags.beam).length_penalty(flags.length_penalty);
}

std::string describe(const BeamFlags& flags) {
  if (flags.beam == 1) return "greedy decoding";
  return fmt::format("beam search, K = {}, length penalty alpha = {}", flags.beam,
                     flags.length_penalty);
}

void print_nbest_lines(std::ostream& out, int64_t line_number,
                       const std::vector<decoding::ScoredWords>& nbest) {
  for (size_t rank = 0; rank < nbest.size(); ++rank) {
    out << fmt::format("{}\t{}\t{:.4f}\t{:.4f}\t{}\n", line_number, rank + 1, nbest[rank].score,
                       nbest[rank].log_probability, text::join_words(nbest[rank].words));
  }
  out << std::flush;
}

void print_nbest_block(std::ostream& out, const std::vector<decoding::ScoredWords>& nbest) {
  for (size_t rank = 0; rank < nbest.size(); ++rank) {
    out << fmt::format("  {}. {:8.4f} (log p {:8.4f})  {}\n", rank + 1, nbest[rank].score,
                       nbest[rank].log_probability,
                       translate_text::shown_sentence(text::join_words(nbest[rank].words)));
  }
}

}  // namespace attograd::translate_beam
