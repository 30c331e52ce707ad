// examples/translate/report_parts.hpp — the pieces of report.html that every
// translate recipe shares (examples/common/run_report.hpp builds the page):
// a translated sentence with its beam hypotheses, and the decoder's
// attention over the source as one map.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "examples/common/cli.hpp"
#include "examples/common/run_report.hpp"
#include "models/translation/translation.hpp"

namespace attograd::translate_report {

// The sentence, its output, the reference (if any) and, with beam search,
// every hypothesis with its score.
cli::ReportTranslation translation_row(const translation::SentenceTranslation& translation,
                                       const std::string& source, const std::string& reference);

// The decoder's attention of the best hypothesis: its output words (and the
// end token when reached) down, `keys` across (the first keys.size()
// columns of each attention row).
cli::ReportAttention decoder_attention(const translation::SentenceTranslation& translation,
                                       const std::string& sentence, const std::string& kind,
                                       const std::vector<std::string>& keys,
                                       const std::string& end_token);

// How many sentences' attention maps a translate command's report.html keeps
// by default (--report-maps), so that the page stays a few MB: a sentence
// of the tutorial or batched recipe has one map, the Transformer's 24 (2
// blocks x 4 heads x 3 kinds), each up to 10 x 10 cells of about 140 bytes.
inline constexpr std::size_t kReportMaps = 100;
inline constexpr std::size_t kTransformerReportMaps = 10;

// --report FILE and --report-maps N, as every translate command declares
// them; `maps` says which maps a sentence gets ("the decoder's attention").
void declare_report_flags(cli::Parser& parser, std::string& report, std::size_t& report_maps,
                          const std::string& maps);

// --report FILE: prepares the folder FILE goes into (prepare_output_folder),
// before any work.
void prepare_report_folder(const std::string& file);

// The files a translate command reads and writes ("" for a flag not given).
struct TranslatePaths {
  std::string checkpoint;  // --checkpoint, read
  std::string attention;   // --attention, the folder of attention_<line>.svg
  std::string report;      // --report, the page
};

// Before any work: neither output is the checkpoint, nor the other output
// (cli::PathsApart); UsageError naming both flags otherwise.
void check_paths_apart(const TranslatePaths& paths);

}  // namespace attograd::translate_report
