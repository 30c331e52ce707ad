// tests/support/svg.hpp — an SVG written by plot/svg_plot, parsed
// with expat (a real XML parser) into its elements in document order: each
// with its tag, attributes, text and enclosing <g> classes. The SVG tests ask
// it for what they check; tests/support/picture.hpp sums it up for the CLI
// tests.
#pragma once

#include <expat.h>

#include <cstddef>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace attograd::testing {

// One element of a parsed SVG: its tag, attributes, the text directly inside
// it, and the classes of the <g> groups enclosing it (innermost last).
struct Element {
  std::string tag;
  std::map<std::string, std::string> attributes;
  std::string text;
  std::vector<std::string> groups;

  std::string attribute(const std::string& name) const {
    const auto found = attributes.find(name);
    return found == attributes.end() ? "" : found->second;
  }
  bool inside(const std::string& group_class) const {
    for (const std::string& group : groups) {
      std::istringstream classes(group);
      for (std::string name; classes >> name;) {
        if (name == group_class) return true;
      }
    }
    return false;
  }
};

struct ParsedSvg {
  std::string error;  // empty when the document is well-formed
  std::vector<Element> elements;

  std::vector<const Element*> all(const std::string& tag) const {
    std::vector<const Element*> found;
    for (const Element& element : elements) {
      if (element.tag == tag) found.push_back(&element);
    }
    return found;
  }
  // Elements `tag` inside a <g> whose class list contains `group_class`.
  std::vector<const Element*> all_in(const std::string& group_class, const std::string& tag) const {
    std::vector<const Element*> found;
    for (const Element& element : elements) {
      if (element.tag == tag && element.inside(group_class)) found.push_back(&element);
    }
    return found;
  }
  std::vector<std::string> texts_in(const std::string& group_class) const {
    std::vector<std::string> texts;
    for (const Element* element : all_in(group_class, "text")) texts.push_back(element->text);
    return texts;
  }
  bool has_text(const std::string& text) const {
    for (const Element* element : all("text")) {
      if (element->text == text) return true;
    }
    return false;
  }
  const Element* series(const std::string& name) const {
    for (const Element* group : all("g")) {
      if (group->attribute("class") == "series" && group->attribute("data-name") == name) {
        return group;
      }
    }
    return nullptr;
  }
  // Elements `tag` inside the series group named `name` (none if there is no such series).
  std::vector<const Element*> in_series(const std::string& name, const std::string& tag) const {
    std::vector<const Element*> found;
    const Element* group = series(name);
    if (group == nullptr) return found;
    const auto begin = elements.begin() + (group - elements.data());
    for (auto it = begin + 1; it != elements.end(); ++it) {
      if (it->groups.size() <= group->groups.size()) break;  // left the group
      if (it->tag == tag) found.push_back(&*it);
    }
    return found;
  }
  std::size_t count_in_series(const std::string& name, const std::string& tag) const {
    return in_series(name, tag).size();
  }
};

// Feeds `svg` to expat. On a syntax error, `error` says what and on which line.
inline ParsedSvg parse_svg(const std::string& svg) {
  struct State {
    ParsedSvg parsed;
    std::vector<std::size_t> open;  // indices of the open elements
    std::vector<std::string> groups;
  } state;
  XML_Parser parser = XML_ParserCreate("UTF-8");
  XML_SetUserData(parser, &state);
  XML_SetElementHandler(
      parser,
      [](void* data, const XML_Char* name, const XML_Char** attributes) {
        auto& state = *static_cast<State*>(data);
        Element element{name, {}, "", state.groups};
        for (int i = 0; attributes[i] != nullptr; i += 2) {
          element.attributes[attributes[i]] = attributes[i + 1];
        }
        if (element.tag == "g") state.groups.push_back(element.attribute("class"));
        state.open.push_back(state.parsed.elements.size());
        state.parsed.elements.push_back(std::move(element));
      },
      [](void* data, const XML_Char* name) {
        auto& state = *static_cast<State*>(data);
        if (std::string(name) == "g") state.groups.pop_back();
        state.open.pop_back();
      });
  XML_SetCharacterDataHandler(parser, [](void* data, const XML_Char* text, int length) {
    auto& state = *static_cast<State*>(data);
    if (!state.open.empty()) {
      state.parsed.elements[state.open.back()].text.append(text, static_cast<std::size_t>(length));
    }
  });
  if (XML_Parse(parser, svg.data(), static_cast<int>(svg.size()), /*isFinal=*/1) ==
      XML_STATUS_ERROR) {
    std::ostringstream error;
    error << "line " << XML_GetCurrentLineNumber(parser) << ": "
          << XML_ErrorString(XML_GetErrorCode(parser));
    state.parsed.error = error.str();
  }
  XML_ParserFree(parser);
  return state.parsed;
}

}  // namespace attograd::testing
