// plot/html_page.cpp — the HTML text of an HtmlPage (html_page.hpp).
#include "plot/html_page.hpp"

#include <fmt/format.h>

#include "plot/svg_document.hpp"
#include "tensor/error.hpp"

namespace attograd::plot {

std::string html_escape(std::string_view text) { return xml_escape(text); }

std::string inline_svg(std::string_view svg) {
  const size_t start = svg.find("<svg");
  check(start != std::string_view::npos,
        "inline_svg: the text has no <svg element (it starts with '{}')",
        std::string(svg.substr(0, 40)));
  return std::string(svg.substr(start));
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
