// plot/html_page.hpp — one self-contained HTML page: inline SVG pictures,
// CSS and a script, with no reference to any other file or to the network.
//
//   plot::HtmlPage page("Training report");
//   page.style("h2 { color: #333; }")
//       .body("<h2>" + plot::html_escape(name) + "</h2>")
//       .body(plot::inline_svg(chart.to_svg()))
//       .script("document.body.dataset.ready = '1';");
//   write_file_atomically("report.html", page.to_html());
//
// The page's parts are written in the order given: the styles in <head>, the
// body, then the scripts at the end of <body> (so they find every element).
// Text from users or data files must go through html_escape before it joins
// the markup; the page itself escapes only its title.
#pragma once

#include <string>
#include <string_view>

namespace attograd::plot {

// Text made safe for HTML content and attribute values (the same rules as
// xml_escape: & < > " ' become entities, stray control characters go).
std::string html_escape(std::string_view text);

// An SVG picture ready to sit inside HTML: whatever comes before its <svg
// element (an XML declaration, a DOCTYPE, comments) is dropped, and every
// id it defines (id="plot-area") gets `id_suffix` appended, as do the
// references to it (url(#plot-area), href="#plot-area"): the pictures of one
// page share one id space, and two charts' clip paths or gradients must not
// collide. Throws if there is no <svg element.
std::string inline_svg(std::string_view svg, std::string_view id_suffix);

class HtmlPage {
 public:
  explicit HtmlPage(std::string title);

  HtmlPage& style(std::string_view css);
  HtmlPage& body(std::string_view html);
  // Script text; it must not contain "</script".
  HtmlPage& script(std::string_view code);

  std::string to_html() const;

 private:
  std::string title_;
  std::string style_;
  std::string body_;
  std::string script_;
};

}  // namespace attograd::plot
