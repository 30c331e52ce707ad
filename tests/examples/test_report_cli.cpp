// tests/examples/test_report_cli.cpp — report.html as the trainers and
// `translate translate --report` write it: one self-contained page (no
// address outside it, no other file), with the expected parts (settings,
// figures, the loss curve, the translations and beam hypotheses, the
// attention maps with their selectors and hover data, NW's width slider),
// the words of the data HTML-escaped, and a Transformer run's page under
// 2 MB. scripts/check_reports.sh loads the same pages in a browser.
//
// Runs are short (a few epochs of tiny models). Like the other CLI tests it
// runs the built float programs; in the double test binary the cases return
// at once.
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "examples/common/run_report.hpp"
#include "tests/support/translate_program.hpp"

namespace test_report_cli {

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

using namespace attograd::testing::translate_program;

const attograd::testing::Program run_nw(fs::path(ATTOGRAD_BINARY_DIR) / "examples" /
                                        "nw_regression");

size_t count(const std::string& text, const std::string& part) {
  size_t found = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++found;
  }
  return found;
}

// The page refers to nothing outside itself: no address but the SVG and
// XLink namespaces' names, no src=, href=, <link>, @import or url() but
// url(#id) of an element in the page, and no id twice.
void require_self_contained(const std::string& html) {
  std::string rest = html;
  for (const std::string name :
       {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink", "url(#"}) {
    for (size_t at = rest.find(name); at != std::string::npos; at = rest.find(name)) {
      rest.erase(at, name.size());
    }
  }
  for (const char* reference : {"http:", "https:", "src=", "href=", "<link", "@import", "url("}) {
    INFO("the page contains " << reference);
    CHECK(rest.find(reference) == std::string::npos);
  }
  std::set<std::string> ids;
  for (size_t at = html.find(" id=\""); at != std::string::npos; at = html.find(" id=\"", at + 1)) {
    const std::string id = html.substr(at + 5, html.find('"', at + 5) - (at + 5));
    INFO("id " << id);
    CHECK(ids.insert(id).second);
  }
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK_THAT(html, Contains("<body>"));
  CHECK_THAT(html, Contains("id=\"report-errors\""));
  CHECK_THAT(html, Contains("document.body.dataset.ready = '1';"));
}

// Runs `program` with `arguments` and returns the self-contained page it
// wrote to `page`.
std::string written_page(const attograd::testing::Program& program,
                         const std::vector<std::string>& arguments, const fs::path& scratch,
                         const fs::path& page, const std::string& input = "") {
  const Run ran = program(arguments, scratch, input);
  INFO("stderr: " << ran.err);
  REQUIRE(ran.status == 0);
  const std::string html = read_file(page);
  require_self_contained(html);
  return html;
}

}  // namespace

TEST_CASE("nw_regression report.html: figures, pictures and the width slider", "[report][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "nw";
  const std::string html = written_page(run_nw, {"--epochs", "3", "--out", out.string()},
                                        scratch.path, out / "report.html");
  CHECK_THAT(html, Contains("<th>epochs</th><td>3</td>"));
  CHECK_THAT(html, Contains("test MSE, learned attention"));
  // The eight pictures inline, the slider's two pictures the script fills,
  // and the first step's graph (drawn without --dot).
  CHECK(count(html, "<svg") == 11);
  CHECK(count(html, "<div class=\"graph\">") == 1);
  CHECK_THAT(html, Contains("data-node="));
  CHECK_THAT(html, Contains("<input type=\"range\" id=\"nw-w\""));
  CHECK_THAT(html, Contains("\"x_train\":["));
  CHECK_THAT(html, Contains("\"w_learned\":"));
  CHECK(fs::file_size(out / "report.html") < 1'000'000);
}

TEST_CASE("translate tutorial report.html: settings, BLEU, loss curve and the maps",
          "[report][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "run";
  const std::string html =
      written_page(run,
                   {"train", "--data", tutorial_data(scratch.path, 60).string(), "--out",
                    out.string(), "--iters", "40", "--hidden", "16", "--print-every", "20",
                    "--plot-every", "5", "--examples", "2", "--validation", "0.1"},
                   scratch.path, out / "report.html");
  CHECK_THAT(html, Contains("<th>iterations</th><td>40</td>"));
  CHECK_THAT(html, Contains("validation BLEU-4"));
  CHECK_THAT(html, Contains("<figcaption>Training loss</figcaption>"));
  // --examples 2: two sentences drawn, each one map over its source words.
  CHECK(count(html, "<figure class=\"map\"") == 2);
  CHECK(count(html, "<table class=\"translation\">") == 2);
  CHECK_THAT(html, Contains("data-q=\""));
  CHECK_THAT(html, Contains("data-k=\"&lt;EOS&gt;\""));
  CHECK_THAT(html, Contains("<select data-field=\"sentence\">"));
  CHECK(count(html, "<div class=\"graph\">") == 1);  // the first step's, without --dot
}

TEST_CASE("translate batched report.html and translate --report with beam hypotheses",
          "[report][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "run";
  const std::string html =
      written_page(run, quick_batched_train(out, 2), scratch.path, out / "report.html");
  // d2l's four test sentences, each with its map (the drawn one, "i'm home .", is one of them).
  CHECK(count(html, "<figure class=\"map\"") == 4);
  CHECK(count(html, "<table class=\"translation\">") == 4);
  CHECK_THAT(html, Contains("<td>i&apos;m home .</td>"));
  CHECK_THAT(html, Contains("BLEU-4 on the 64 training pairs"));
  CHECK_THAT(html, Contains("<th>embed E</th><td>8</td>"));
  CHECK(count(html, "<div class=\"graph\">") == 1);

  // Words from stdin are escaped; beam search lists its hypotheses.
  const fs::path page = scratch.path / "pages" / "sentences.html";
  const std::string sentences = written_page(
      run,
      {"translate", "--recipe", "batched", "--checkpoint",
       (out / "checkpoint.safetensors").string(), "--beam", "3", "--report", page.string()},
      scratch.path, page, "i'm <b>&home .\ngo .\n");
  CHECK_THAT(sentences, Contains("<td>i&apos;m &lt;b&gt;&amp;home .</td>"));
  CHECK(sentences.find("<b>") == std::string::npos);
  CHECK(count(sentences, "<th>beam 3</th>") == 2);
  CHECK(count(sentences, "<figure class=\"map\"") == 2);
  CHECK_THAT(sentences, Contains("beam search, K = 3"));
}

TEST_CASE("translate transformer report.html: every block, head and kind, under 2 MB",
          "[report][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "run";
  const std::string html =
      written_page(run, quick_transformer_train(out, 2), scratch.path, out / "report.html");
  // 4 sentences x 2 blocks x 2 heads x 3 kinds.
  CHECK(count(html, "<figure class=\"map\"") == 48);
  for (const char* kind : {"encoder self", "decoder self", "encoder–decoder"}) {
    CHECK(count(html, std::string("data-kind=\"") + kind + "\"") == 16);
  }
  CHECK(count(html, "data-head=\"2\"") == 24);
  CHECK(count(html, "data-block=\"2\"") == 24);
  for (const char* field : {"sentence", "kind", "block", "head"}) {
    CHECK_THAT(html, Contains(std::string("<select data-field=\"") + field + "\">"));
  }
  CHECK(fs::file_size(out / "report.html") < 2'000'000);
  CHECK(count(html, "<div class=\"graph\">") == 1);

  const fs::path page = scratch.path / "sentences.html";
  const std::string sentences =
      written_page(run,
                   {"translate", "--recipe", "transformer", "--checkpoint",
                    (out / "checkpoint.safetensors").string(), "--report", page.string()},
                   scratch.path, page, "i'm home .\n");
  CHECK(count(sentences, "<figure class=\"map\"") == 12);
  CHECK(count(sentences, "<div class=\"graph\">") == 0);  // nothing trained, no graph
  CHECK_THAT(sentences, Contains("<th>decoding</th><td>greedy decoding</td>"));
}

TEST_CASE("RunReport::keep_maps_of keeps the first N sentences' maps and every text, and says so",
          "[report]") {
  // 2,000 sentences of 24 maps each (a Transformer's 2 blocks x 4 heads x 3
  // kinds) of 10 x 10 weights, the most its 10 steps make: without a limit,
  // a page of hundreds of MB.
  attograd::cli::RunReport report("maps");
  report.keep_maps_of(10, "--report-maps");
  const std::vector<std::string> words(10, "w");
  for (int sentence = 1; sentence <= 2000; ++sentence) {
    const std::string name = std::to_string(sentence) + ": w w";
    report.translation({.source = name, .output = "o", .reference = "", .hypotheses = {}});
    for (int map = 0; map < 24; ++map) {
      report.attention({.sentence = name,
                        .kind = "k",
                        .block = 1 + map / 12,
                        .head = 1 + map % 4,
                        .queries = words,
                        .keys = words,
                        .weights = std::vector<double>(100, 0.5)});
    }
  }
  CHECK(report.attention_count() == 10 * 24);
  const std::string html = report.to_html();
  CHECK(count(html, "<figure class=\"map\"") == 10 * 24);
  CHECK(count(html, "<table class=\"translation\">") == 2000);
  CHECK_THAT(html, Contains("Maps of the first 10 of 2,000 sentences; the other 1,990 are left "
                            "out, so that the page stays small (--report-maps N to keep the "
                            "first N)"));
  CHECK(html.size() < 5'000'000);

  attograd::cli::RunReport none("no maps");
  none.keep_maps_of(0, "--report-maps");
  none.attention({.sentence = "1: a",
                  .kind = "k",
                  .block = 0,
                  .head = 0,
                  .queries = {"a"},
                  .keys = {"b"},
                  .weights = {1.0}});
  const std::string empty = none.to_html();
  CHECK(count(empty, "<figure class=\"map\"") == 0);
  CHECK_THAT(empty, Contains("No maps of the 1 sentence, so that"));
  CHECK_THROWS_WITH(none.keep_maps_of(3, "--x"), Contains("before the first attention map"));
}

TEST_CASE("translate --report-maps N: the page keeps N sentences' maps, every sentence's text",
          "[report][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  const fs::path out = scratch.path / "run";
  const Run trained = run(quick_batched_train(out, 1), scratch.path);
  REQUIRE(trained.status == 0);
  const fs::path page = scratch.path / "sentences.html";
  const std::string html = written_page(
      run,
      {"translate", "--recipe", "batched", "--checkpoint",
       (out / "checkpoint.safetensors").string(), "--report", page.string(), "--report-maps", "2"},
      scratch.path, page, "go .\ni'm home .\nhe's calm .\n");
  CHECK(count(html, "<figure class=\"map\"") == 2);
  CHECK(count(html, "<table class=\"translation\">") == 3);
  CHECK_THAT(html, Contains("Maps of the first 2 of 3 sentences; the other 1 is left out"));
  const Run help = run({"translate", "--recipe", "batched", "--help"}, scratch.path);
  CHECK_THAT(help.out, Contains("--report-maps"));
}

TEST_CASE("translate --report: an unwritable folder is refused before any work", "[report][cli]") {
  if constexpr (!kFloatBuild) return;
  TemporaryFolder scratch;
  write_file(scratch.path / "file", "x");
  const Run refused = run({"translate", "--report", (scratch.path / "file" / "r.html").string()},
                          scratch.path, "go .\n");
  require_one_line_error(refused);
  CHECK_THAT(refused.err, Contains("--report"));
}

}  // namespace test_report_cli
