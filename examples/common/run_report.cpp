// examples/common/run_report.cpp — the page behind RunReport
// (run_report.hpp): tables, pictures and the attention grid as HTML, and the
// one script that drives the selectors and the hover read-out.
#include "examples/common/run_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "plot/html_page.hpp"
#include "plot/svg_heatmap.hpp"
#include "tensor/atomic_file.hpp"
#include "tensor/error.hpp"

namespace attograd::cli {

namespace {

using plot::html_escape;

constexpr const char* kStyle =
    R"(body { font: 14px/1.4 sans-serif; color: #222; margin: 1.5em; max-width: 1400px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; }
td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
.pictures, .grid { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; }
figure { margin: 0; } figcaption { font-size: 12px; color: #555; }
.selectors label { margin-right: 1em; }
#hover-readout { font-family: monospace; min-height: 1.4em; }
#report-errors { color: #b00; } #report-errors:empty { display: none; }
rect[data-w]:hover { stroke: #000; stroke-width: 1.5; }
)";

// Catches errors from here on and writes them into the page.
constexpr const char* kErrorTrap = R"(<pre id="report-errors"></pre>
<script>
window.addEventListener('error', function (event) {
  document.getElementById('report-errors').textContent += (event.message || 'error') + '\n';
  document.body.dataset.errors = '1';
});
</script>
)";

// The selectors of the attention grid, the fragment that presets them and
// the hover read-out.
constexpr const char* kScript = R"((function () {
  var grid = document.getElementById('attention-grid');
  var selects = Array.prototype.slice.call(document.querySelectorAll('select[data-field]'));
  var wanted = new URLSearchParams(location.hash.slice(1) || location.search.slice(1));
  selects.forEach(function (select) {
    var value = wanted.get(select.dataset.field);
    if (value !== null) {
      var known = Array.prototype.some.call(select.options, function (o) { return o.value === value; });
      if (!known) throw new Error('no ' + select.dataset.field + ' "' + value + '" in this report');
      select.value = value;
    }
    select.addEventListener('change', show);
  });
  function show() {
    if (!grid) return;
    var shown = 0;
    Array.prototype.forEach.call(grid.querySelectorAll('figure.map'), function (map) {
      var visible = selects.every(function (s) {
        return s.value === 'all' || map.dataset[s.dataset.field] === s.value;
      });
      map.hidden = !visible;
      if (visible) shown += 1;
    });
    grid.dataset.shown = String(shown);
    document.getElementById('attention-status').textContent = shown + ' map' + (shown === 1 ? '' : 's') + ' shown';
  }
  show();
  var view = wanted.get('view');
  if (view) {
    if (!document.getElementById(view)) throw new Error('no section "' + view + '" in this report');
    Array.prototype.forEach.call(document.querySelectorAll('section'), function (section) {
      section.hidden = section.id !== view;
    });
  }
  // A hovered cell gets its tooltip (a <title>) then, which keeps the page small.
  var readout = document.getElementById('hover-readout');
  document.addEventListener('mouseover', function (event) {
    var cell = event.target;
    if (!cell.dataset || cell.dataset.w === undefined) return;
    var text = cell.dataset.q + ' \u2192 ' + cell.dataset.k + ': ' + cell.dataset.w;
    if (readout) readout.textContent = text;
    if (!cell.querySelector('title')) {
      cell.appendChild(document.createElementNS('http://www.w3.org/2000/svg', 'title')).textContent = text;
    }
  });
})();
)";

// 1975 -> "1,975": counts of sentences as a reader says them.
std::string grouped(std::size_t count) {
  const std::string digits = std::to_string(count);
  std::string text;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) text += ',';
    text += digits[i];
  }
  return text;
}

std::string table(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string html = "<table>\n";
  for (const auto& [name, value] : rows) {
    html += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", html_escape(name), html_escape(value));
  }
  return html + "</table>\n";
}

std::string translations_html(const std::vector<ReportTranslation>& sentences) {
  std::string html;
  for (const ReportTranslation& sentence : sentences) {
    html += "<table class=\"translation\">\n";
    html += fmt::format("<tr><th>source</th><td>{}</td></tr>\n", html_escape(sentence.source));
    html += fmt::format("<tr><th>output</th><td>{}</td></tr>\n", html_escape(sentence.output));
    if (!sentence.reference.empty()) {
      html +=
          fmt::format("<tr><th>reference</th><td>{}</td></tr>\n", html_escape(sentence.reference));
    }
    for (std::size_t k = 0; k < sentence.hypotheses.size() && sentence.hypotheses.size() > 1; ++k) {
      html +=
          fmt::format("<tr><th>beam {}</th><td>{} <small>(score {:.4f})</small></td></tr>\n", k + 1,
                      html_escape(sentence.hypotheses[k].first), sentence.hypotheses[k].second);
    }
    html += "</table>\n";
  }
  return html;
}

// The distinct values of one field of the maps, in first-seen order.
template <typename Field>
std::vector<std::string> distinct(const std::vector<ReportAttention>& maps, Field field) {
  std::vector<std::string> values;
  for (const ReportAttention& map : maps) {
    const std::string value = field(map);
    if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
  }
  return values;
}

// A <select> for `field` when it takes more than one value; `first` selects
// the first value at load, otherwise "all".
std::string selector(const std::string& field, const std::vector<std::string>& values,
                     const std::vector<std::string>& labels, bool first) {
  if (values.size() < 2) return "";
  std::string html = fmt::format("<label>{} <select data-field=\"{}\">", field, field);
  if (!first) html += "<option value=\"all\">all</option>";
  for (std::size_t i = 0; i < values.size(); ++i) {
    html += fmt::format("<option value=\"{}\">{}</option>", html_escape(values[i]),
                        html_escape(labels[i]));
  }
  return html + "</select></label>\n";
}

}  // namespace

RunReport::RunReport(std::string title) : title_(std::move(title)) {}

RunReport& RunReport::setting(std::string name, std::string value) {
  settings_.emplace_back(std::move(name), std::move(value));
  return *this;
}

RunReport& RunReport::figure(std::string name, std::string value) {
  figures_.emplace_back(std::move(name), std::move(value));
  return *this;
}

RunReport& RunReport::picture(std::string caption, std::string svg) {
  pictures_.emplace_back(std::move(caption),
                         plot::inline_svg(svg, fmt::format("-p{}", pictures_.size() + 1)));
  return *this;
}

RunReport& RunReport::translation(ReportTranslation sentence) {
  translations_.push_back(std::move(sentence));
  return *this;
}

RunReport& RunReport::attention(ReportAttention map) {
  check(map.weights.size() == map.queries.size() * map.keys.size(),
        "RunReport::attention: {} weights for {} queries x {} keys", map.weights.size(),
        map.queries.size(), map.keys.size());
  map_sentences_offered_.insert(map.sentence);
  const bool known = std::find(map_sentences_kept_.begin(), map_sentences_kept_.end(),
                               map.sentence) != map_sentences_kept_.end();
  if (!known) {
    if (map_sentences_limit_ && map_sentences_kept_.size() >= *map_sentences_limit_) {
      return *this;  // a sentence beyond the limit: its text stays, its maps do not
    }
    map_sentences_kept_.push_back(map.sentence);
  }
  maps_.push_back(std::move(map));
  return *this;
}

RunReport& RunReport::keep_maps_of(std::size_t sentences, std::string flag) {
  check(map_sentences_offered_.empty(),
        "RunReport::keep_maps_of: call it before the first attention map");
  map_sentences_limit_ = sentences;
  map_limit_flag_ = std::move(flag);
  return *this;
}

RunReport& RunReport::add_graph_svg(std::string svg) {
  if (svg.empty()) return *this;  // no step ran (a run resumed at its end): no graph section
  graph_svg_ = plot::inline_svg(svg, "-graph");
  return *this;
}

RunReport& RunReport::section(std::string heading, std::string html, std::string script) {
  sections_.push_back({std::move(heading), std::move(html), std::move(script)});
  return *this;
}

std::string RunReport::attention_html() const {
  const std::size_t offered = map_sentences_offered_.size();
  const std::size_t kept = map_sentences_kept_.size();
  std::string left_out;
  if (kept < offered) {
    const std::string kept_text =
        kept == 0
            ? fmt::format("No maps of the {} sentence{}", grouped(offered), offered == 1 ? "" : "s")
            : fmt::format("Maps of the first {} of {} sentences; the other {} {} left out",
                          grouped(kept), grouped(offered), grouped(offered - kept),
                          offered - kept == 1 ? "is" : "are");
    left_out = fmt::format(
        "<p id=\"maps-left-out\">{}, so that the page stays small ({} N to keep the first "
        "N)</p>\n",
        kept_text, html_escape(map_limit_flag_));
  }
  if (maps_.empty()) return left_out;
  const auto sentence_of = [](const ReportAttention& m) { return m.sentence; };
  const auto kind_of = [](const ReportAttention& m) { return m.kind; };
  const auto block_of = [](const ReportAttention& m) { return std::to_string(m.block); };
  const auto head_of = [](const ReportAttention& m) { return std::to_string(m.head); };
  // Sentences are selected by number: a sentence's words need no URL escaping then.
  const std::vector<std::string> sentences = distinct(maps_, sentence_of);
  std::vector<std::string> sentence_numbers;
  for (std::size_t i = 0; i < sentences.size(); ++i)
    sentence_numbers.push_back(std::to_string(i + 1));
  const std::vector<std::string> kinds = distinct(maps_, kind_of);
  const std::vector<std::string> blocks = distinct(maps_, block_of);
  const std::vector<std::string> heads = distinct(maps_, head_of);

  std::string html = left_out + "<div class=\"selectors\">\n";
  html += selector("sentence", sentence_numbers, sentences, true);
  html += selector("kind", kinds, kinds, true);
  html += selector("block", blocks, blocks, false);
  html += selector("head", heads, heads, false);
  html +=
      "<span id=\"attention-status\"></span></div>\n"
      "<p>Cell: <span id=\"hover-readout\">hover a cell</span></p>\n"
      "<div class=\"grid\" id=\"attention-grid\">\n";
  for (std::size_t i = 0; i < maps_.size(); ++i) {
    const ReportAttention& map = maps_[i];
    const auto number = static_cast<std::size_t>(
        std::find(sentences.begin(), sentences.end(), map.sentence) - sentences.begin() + 1);
    std::string caption = map.kind;
    if (map.block > 0) caption += fmt::format(", block {}", map.block);
    if (map.head > 0) caption += fmt::format(", head {}", map.head);
    plot::Heatmap heatmap(map.queries.size(), map.keys.size(), map.weights);
    heatmap.row_labels(map.queries)
        .column_labels(map.keys)
        .x_label("Keys")
        .y_label("Queries")
        .value_limits(0, 1)
        .colormap(plot::Colormap::reds())
        .size(340, 300)
        .hover_cells();
    html += fmt::format(
        "<figure class=\"map\" data-sentence=\"{}\" data-kind=\"{}\" data-block=\"{}\" "
        "data-head=\"{}\"><figcaption>{}: {}</figcaption>\n{}</figure>\n",
        number, html_escape(map.kind), map.block, map.head, number, html_escape(caption),
        plot::inline_svg(heatmap.to_svg(), fmt::format("-m{}", i + 1)));
  }
  return html + "</div>\n";
}

std::string RunReport::to_html() const {
  plot::HtmlPage page(title_);
  page.style(kStyle).body(kErrorTrap);
  page.body(fmt::format("<h1>{}</h1>\n", html_escape(title_)));
  // Each part is a <section> with an id, which view=<id> shows alone.
  const auto part = [&](const char* id, const std::string& heading, const std::string& html) {
    page.body(fmt::format("<section id=\"{}\">\n<h2>{}</h2>\n", id, html_escape(heading)))
        .body(html)
        .body("</section>\n");
  };
  if (!settings_.empty()) part("configuration", "Configuration", table(settings_));
  if (!figures_.empty()) part("figures", "Final figures", table(figures_));
  if (!pictures_.empty()) {
    std::string html = "<div class=\"pictures\">\n";
    for (const auto& [caption, svg] : pictures_) {
      html += fmt::format("<figure class=\"picture\">{}<figcaption>{}</figcaption></figure>\n", svg,
                          html_escape(caption));
    }
    part("pictures", "Pictures", html + "</div>\n");
  }
  for (std::size_t i = 0; i < sections_.size(); ++i) {
    part(fmt::format("section{}", i + 1).c_str(), sections_[i].heading, sections_[i].html);
  }
  if (!translations_.empty())
    part("translations", "Translations", translations_html(translations_));
  if (!map_sentences_offered_.empty()) part("attention", "Attention maps", attention_html());
  if (!graph_svg_.empty()) {
    part("graph", "The graph of one training step",
         "<div class=\"graph\">\n" + graph_svg_ + "</div>\n");
  }
  page.script(kScript);
  for (const Section& section : sections_) page.script(section.script);
  // When the page's scripts have ended, and how long after navigation began:
  // scripts/check_reports.py reads both.
  page.script(
      "document.body.dataset.readyMs = String(Math.round(performance.now()));\n"
      "document.body.dataset.ready = '1';\n");
  return page.to_html();
}

void RunReport::save(const std::filesystem::path& path) const {
  write_file_atomically(path, to_html());
}

}  // namespace attograd::cli
