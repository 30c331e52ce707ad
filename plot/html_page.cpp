// plot/html_page.cpp — the HTML text of an HtmlPage (html_page.hpp).
#include "plot/html_page.hpp"

#include <fmt/format.h>

#include <vector>

#include "plot/svg_document.hpp"
#include "tensor/error.hpp"

namespace attograd::plot {

std::string html_escape(std::string_view text) { return xml_escape(text); }

namespace {

// Every occurrence of `from` in `text` replaced by `to`.
void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

}  // namespace

std::string inline_svg(std::string_view svg, std::string_view id_suffix) {
  const size_t start = svg.find("<svg");
  check(start != std::string_view::npos,
        "inline_svg: the text has no <svg element (it starts with '{}')",
        std::string(svg.substr(0, 40)));
  std::string text(svg.substr(start));
  // The ids first (they are read from the original), then every use of each.
  std::vector<std::string> ids;
  for (size_t at = text.find(" id=\""); at != std::string::npos; at = text.find(" id=\"", at + 1)) {
    const size_t begin = at + 5, end = text.find('"', begin);
    if (end == std::string::npos) break;
    ids.push_back(text.substr(begin, end - begin));
  }
  for (const std::string& id : ids) {
    const std::string renamed = id + std::string(id_suffix);
    for (const char* form : {" id=\"{}\"", "url(#{})", "href=\"#{}\""}) {
      replace_all(text, fmt::format(fmt::runtime(form), id),
                  fmt::format(fmt::runtime(form), renamed));
    }
  }
  return text;
}

HtmlPage::HtmlPage(std::string title) : title_(std::move(title)) {}

HtmlPage& HtmlPage::style(std::string_view css) {
  style_ += css;
  return *this;
}

HtmlPage& HtmlPage::body(std::string_view html) {
  body_ += html;
  return *this;
}

HtmlPage& HtmlPage::script(std::string_view code) {
  check(code.find("</script") == std::string_view::npos,
        "HtmlPage::script: the code contains \"</script\", which would end the script early");
  script_ += code;
  return *this;
}

std::string HtmlPage::to_html() const {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{}</title>\n<style>\n{}</style>\n</head>\n<body>\n{}<script>\n{}</script>\n"
      "</body>\n</html>\n",
      html_escape(title_), style_, body_, script_);
}

}  // namespace attograd::plot
