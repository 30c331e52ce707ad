// examples/translate/report_parts.cpp — see report_parts.hpp.
#include "examples/translate/report_parts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "examples/common/output_folder.hpp"
#include "examples/common/paths_apart.hpp"
#include "models/text/normalize.hpp"

namespace attograd::translate_report {

cli::ReportTranslation translation_row(const translation::SentenceTranslation& translation,
                                       const std::string& source, const std::string& reference) {
  cli::ReportTranslation row{source, text::join_words(translation.output_words), reference, {}};
  for (const decoding::ScoredWords& hypothesis : translation.nbest) {
    row.hypotheses.emplace_back(text::join_words(hypothesis.words), hypothesis.score);
  }
  return row;
}

cli::ReportAttention decoder_attention(const translation::SentenceTranslation& translation,
                                       const std::string& sentence, const std::string& kind,
                                       const std::vector<std::string>& keys,
                                       const std::string& end_token) {
  cli::ReportAttention map{sentence, kind, 0, 0, translation.output_words, keys, {}};
  const decoding::Hypothesis& best = translation.best;
  if (best.reached_end) map.queries.push_back(end_token);
  map.queries.resize(static_cast<size_t>(best.length));
  const auto width = static_cast<size_t>(best.attention_width);
  map.keys.resize(std::min(map.keys.size(), width));
  for (size_t step = 0; step < map.queries.size(); ++step) {
    for (size_t column = 0; column < map.keys.size(); ++column) {
      map.weights.push_back(best.attention[step * width + column]);
    }
  }
  return map;
}

void declare_report_flags(cli::Parser& parser, std::string& report, std::size_t& report_maps,
                          const std::string& maps) {
  parser
      .flag("report", report,
            fmt::format("write one HTML page (report.html) of the sentences, their beam "
                        "hypotheses and {} to this file",
                        maps))
      .flag("report-maps", report_maps,
            "the page keeps the maps of the first N sentences (every sentence's text stays), "
            "so that it stays a few MB; 0 for none",
            cli::count_at_most(1'000'000));
}

void prepare_report_folder(const std::string& file) {
  const std::filesystem::path parent = std::filesystem::path(file).parent_path();
  cli::prepare_output_folder("--report", parent.empty() ? std::filesystem::path(".") : parent);
}

void check_paths_apart(const TranslatePaths& paths) {
  cli::PathsApart apart;
  apart.reads("--checkpoint", paths.checkpoint)
      .writes_matching("--attention", paths.attention, "attention_*.svg")
      .writes("--report", paths.report)
      .check();
}

}  // namespace attograd::translate_report
