// examples/common/run_report.hpp — report.html, one self-contained page per
// run: the configuration, the final figures, the pictures (loss curve, fits),
// the translations with their beam hypotheses, every attention map on one
// grid with selectors, and the graph of one step.
//
//   cli::RunReport report("translate train --recipe transformer");
//   report.setting("epochs", "30").figure("BLEU-4", "0.71");
//   report.picture("Training loss", chart.to_svg());
//   report.attention({.sentence = "i'm home .", .kind = "encoder self", .block = 1,
//                     .head = 2, .queries = words, .keys = words, .weights = w});
//   report.save(set.staged("report.html"));      // atomically, like every file
//
// The page needs no network and no other file: the pictures are inline SVG
// (plot/), the styles and the script are in the page. Every text from the
// run (words of the data files, flag values) is HTML-escaped here.
//
// The attention grid shows the maps whose sentence, kind, block and head
// match the selectors (a selector appears when its field takes more than one
// value). The page's address can preselect them, e.g.
// report.html#head=2&kind=encoder%20self, which is how
// scripts/check_reports.py drives the page in a headless browser
// (view=attention shows that section alone: each part of the page is a
// <section> with an id: configuration, figures, pictures, section1…,
// translations, attention, graph). Hovering a
// cell shows its query word, key word and weight (the cells carry data-q,
// data-k and data-w, and a tooltip). An error in the page's script is written
// into <pre id="report-errors">, and <body data-ready="1"> marks a page whose
// script ran to its end.
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace attograd::cli {

// One attention map: queries down, keys across.
struct ReportAttention {
  std::string sentence;  // the sentence it belongs to, as the selector shows it
  std::string kind;      // "encoder self", "decoder self", "encoder–decoder", …
  int block = 0;         // 1, 2, …; 0 for a model without blocks
  int head = 0;          // 1, 2, …; 0 for a single head
  std::vector<std::string> queries;
  std::vector<std::string> keys;
  std::vector<double> weights;  // queries.size() x keys.size(), row-major
};

// One translated sentence; with beam search, the hypotheses, best first.
struct ReportTranslation {
  std::string source;
  std::string output;
  std::string reference;                                   // "" when there is none
  std::vector<std::pair<std::string, double>> hypotheses;  // (words, score)
};

class RunReport {
 public:
  explicit RunReport(std::string title);

  // A row of the configuration table (flags and sizes).
  RunReport& setting(std::string name, std::string value);
  // A row of the final figures (loss, BLEU, errors).
  RunReport& figure(std::string name, std::string value);
  // An SVG picture (LineChart::to_svg, Heatmap::to_svg) under a caption.
  RunReport& picture(std::string caption, std::string svg);
  RunReport& translation(ReportTranslation sentence);
  RunReport& attention(ReportAttention map);
  // Keeps the attention maps of the first `sentences` sentences only (in the
  // order their maps arrive; 0 keeps none), so that the page stays a few MB
  // however many sentences a run translates: every translation's text stays.
  // The page says how many sentences' maps it left out and that `flag`
  // changes the number.
  RunReport& keep_maps_of(std::size_t sentences, std::string flag);
  // The picture of one step's graph (an SVG document; a leading XML
  // declaration or DOCTYPE is dropped; an empty one adds nothing).
  RunReport& add_graph_svg(std::string svg);
  // A section of the program's own: `html` is trusted markup (escape what
  // comes from data), `script` runs after the page's own script.
  RunReport& section(std::string heading, std::string html, std::string script = "");

  std::size_t attention_count() const { return maps_.size(); }

  std::string to_html() const;
  // Writes to_html() to `path` atomically; throws attograd::Error on failure.
  void save(const std::filesystem::path& path) const;

 private:
  std::string attention_html() const;

  struct Section {
    std::string heading;
    std::string html;
    std::string script;
  };
  std::string title_;
  std::vector<std::pair<std::string, std::string>> settings_;
  std::vector<std::pair<std::string, std::string>> figures_;
  std::vector<std::pair<std::string, std::string>> pictures_;  // caption, inline SVG
  std::vector<ReportTranslation> translations_;
  std::vector<ReportAttention> maps_;
  std::optional<std::size_t> map_sentences_limit_;  // none: every sentence's maps
  std::string map_limit_flag_;
  std::vector<std::string> map_sentences_kept_;
  std::set<std::string> map_sentences_offered_;
  std::string graph_svg_;
  std::vector<Section> sections_;
};

}  // namespace attograd::cli
