// tests/architecture/doc_references.cpp — the checker of doc_references.hpp.
#include "tests/architecture/doc_references.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <tuple>

namespace attograd::architecture {

namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::string_view extension_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const size_t dot = name.rfind('.');
  return dot == std::string_view::npos || dot == 0 ? std::string_view() : name.substr(dot);
}

bool is_markdown(std::string_view path) { return extension_of(path) == ".md"; }

bool is_cpp(std::string_view path) {
  const std::string_view extension = extension_of(path);
  return extension == ".cpp" || extension == ".hpp" || extension == ".h" || extension == ".cc";
}

bool is_hash_commented(std::string_view path) {
  const std::string_view extension = extension_of(path);
  return extension == ".sh" || extension == ".py" || extension == ".cmake" ||
         ends_with(path, "CMakeLists.txt") || (starts_with(path, ".ci/") && extension.empty());
}

bool is_path_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '/' ||
         c == '-';
}

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// The 1-based line of each offset, from the offsets where lines start.
struct Lines {
  explicit Lines(std::string_view text) {
    for (size_t k = 0; k < text.size(); ++k)
      if (text[k] == '\n') starts.push_back(k + 1);
  }
  int at(size_t offset) const {
    return static_cast<int>(std::upper_bound(starts.begin(), starts.end(), offset) -
                            starts.begin());
  }
  std::vector<size_t> starts = {0};
};

// A script's `#` comments, the rest blanked. A '#' opens a comment at the
// start of a line or after a space, outside quotes.
std::string hash_comments(std::string_view text) {
  std::string out(text.size(), ' ');
  char quote = 0;
  bool comment = false;
  for (size_t k = 0; k < text.size(); ++k) {
    const char c = text[k];
    if (c == '\n') {
      out[k] = '\n';
      comment = false;
      quote = 0;
      continue;
    }
    if (comment) {
      out[k] = c;
    } else if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (k == 0 || std::isspace(static_cast<unsigned char>(text[k - 1])))) {
      comment = true;
    }
  }
  return out;
}

// `text` with every URL (scheme://…) replaced by spaces.
std::string without_urls(std::string text) {
  size_t at = 0;
  while ((at = text.find("://", at)) != std::string::npos) {
    size_t begin = at;
    while (begin > 0 && std::isalpha(static_cast<unsigned char>(text[begin - 1]))) --begin;
    size_t end = at + 3;
    while (end < text.size() &&
           std::string_view(" \t\n)>]`'\"").find(text[end]) == std::string_view::npos)
      ++end;
    std::fill(text.begin() + static_cast<std::ptrdiff_t>(begin),
              text.begin() + static_cast<std::ptrdiff_t>(end), ' ');
    at = end;
  }
  return text;
}

bool is_generated(std::string_view first_component) {
  for (const GeneratedFolder& generated : kGeneratedFolders) {
    const std::string_view pattern = generated.first_component;
    if (ends_with(pattern, "*")
            ? starts_with(first_component, pattern.substr(0, pattern.size() - 1))
            : first_component == pattern)
      return true;
  }
  return false;
}

bool is_repository_folder(std::string_view first_component) {
  return std::find(kRepositoryFolders.begin(), kRepositoryFolders.end(), first_component) !=
         kRepositoryFolders.end();
}

// `path` with "." and "x/.." components resolved; nullopt when it climbs out
// of the repository.
std::optional<std::string> normalised(std::string_view path) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find('/', begin);
    if (end == std::string_view::npos) end = path.size();
    const std::string part(path.substr(begin, end - begin));
    if (part == "..") {
      if (parts.empty()) return std::nullopt;
      parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    begin = end + 1;
  }
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : "/") + part;
  return out;
}

// Rule a: words that start with a repository folder.
void find_paths(std::string_view text, const Lines& lines, References& found) {
  for (size_t k = 0; k < text.size(); ++k) {
    if (!is_path_char(text[k]) || text[k] == '/' || text[k] == '-') continue;
    if (k > 0 && (is_path_char(text[k - 1]) || text[k - 1] == '$' || text[k - 1] == '~' ||
                  text[k - 1] == '@' || text[k - 1] == ':')) {
      continue;
    }
    size_t end = k;
    while (end < text.size() && is_path_char(text[end])) ++end;
    std::string_view word = text.substr(k, end - k);
    const size_t start = k;
    k = end;
    const size_t slash = word.find('/');
    if (slash == std::string_view::npos) continue;
    const std::string_view first = word.substr(0, slash);
    if (!is_repository_folder(first) || is_generated(first)) continue;
    // A glob or a placeholder (`tensor/kernels*`, `models/<recipe>/`) keeps
    // only the folders before it.
    if (end < text.size() && std::string_view("*<{[").find(text[end]) != std::string_view::npos)
      word = word.substr(0, word.rfind('/') + 1);
    // A sentence's full stop or comma is not part of the path.
    while (!word.empty() && (word.back() == '.' || word.back() == ',' || word.back() == '-'))
      word.remove_suffix(1);
    // A file the reader is to create ("a new `autograd/ops_activation.cpp`").
    const std::string_view before =
        text.substr(start >= 16 ? start - 16 : 0, start >= 16 ? 16 : start);
    if (ends_with(before, "a new `") || ends_with(before, "a new ")) continue;
    const bool folder = ends_with(word, "/");
    const std::optional<std::string> path = normalised(word);
    if (!path || path->empty()) continue;
    found.paths.push_back({lines.at(start), *path, folder});
  }
}

// Markdown link targets, `](target)`, relative to the page's folder.
void find_links(std::string_view page, std::string_view text, const Lines& lines,
                References& found) {
  const std::string_view folder = page.substr(0, page.rfind('/') + 1);
  size_t at = 0;
  while ((at = text.find("](", at)) != std::string_view::npos) {
    const size_t begin = at + 2;
    const size_t end = text.find_first_of(") \n", begin);
    at = begin;
    if (end == std::string_view::npos || text[end] != ')') continue;
    std::string_view target = text.substr(begin, end - begin);
    target = target.substr(0, target.find('#'));
    // URLs were blanked; mail and other schemes are not files.
    if (target.empty() || target.find(':') != std::string_view::npos) continue;
    const bool is_folder = ends_with(target, "/");
    const std::optional<std::string> path = normalised(std::string(folder) + std::string(target));
    if (!path || path->empty()) continue;
    const std::string first = path->substr(0, path->find('/'));
    if (is_generated(first)) continue;
    found.paths.push_back({lines.at(begin), *path, is_folder});
  }
}

// "foo", "A::foo", "operator*", or "foo(…)" cut to "foo"; empty when the
// backticked text is not a name at all.
std::string name_in(std::string span) {
  if (!starts_with(span, "operator")) span = span.substr(0, span.find('('));
  if (span.empty()) return {};
  if (starts_with(span, "operator")) return span;
  for (char c : span)
    if (!is_identifier_char(c) && c != ':' && c != '~') return {};
  if (std::isdigit(static_cast<unsigned char>(span[0])) || span.front() == ':' ||
      span.back() == ':')
    return {};
  return span;
}

bool is_source_path(std::string_view path) {
  if (path.find('/') == std::string_view::npos) return false;
  const std::string_view extension = extension_of(path);
  return is_cpp(path) || extension == ".py" || extension == ".sh";
}

// Rule b: the three forms.
void find_names(std::string_view text, const Lines& lines, References& found) {
  const std::string copy(text);
  const auto add = [&](size_t offset, const std::string& file, const std::string& span) {
    const std::string name = name_in(span);
    if (!name.empty() && is_source_path(file))
      found.names.push_back({lines.at(offset), file, name});
  };
  // `FILE`, function `NAME` / `FILE`, functions `A` (…) and `B`.
  static const std::regex function_form(R"(`([^`\s]+)`,\s+function(s?)\s+`([^`]+)`)");
  for (std::sregex_iterator it(copy.begin(), copy.end(), function_form), end; it != end; ++it) {
    const size_t offset = static_cast<size_t>(it->position(0));
    add(offset, (*it)[1].str(), (*it)[3].str());
    if ((*it)[2].length() == 0) continue;
    // The other names of the list, up to the end of the sentence.
    size_t at = static_cast<size_t>(it->position(0) + it->length(0));
    size_t stop = at;
    while (stop < copy.size() &&
           !(copy[stop] == '.' && (stop + 1 == copy.size() ||
                                   std::isspace(static_cast<unsigned char>(copy[stop + 1])))) &&
           !(copy[stop] == ':' &&
             (stop + 1 == copy.size() || std::isspace(static_cast<unsigned char>(copy[stop + 1])))))
      ++stop;
    while ((at = copy.find('`', at)) < stop) {
      const size_t close = copy.find('`', at + 1);
      if (close == std::string::npos || close > stop) break;
      add(offset, (*it)[1].str(), copy.substr(at + 1, close - at - 1));
      at = close + 1;
    }
  }
  // `NAME` in `FILE` and `NAME` (`FILE`
  static const std::regex in_form(R"(`([^`\n]+)`\s+(?:in\s+|\()`([^`\s]+)`)");
  for (std::sregex_iterator it(copy.begin(), copy.end(), in_form), end; it != end; ++it) {
    add(static_cast<size_t>(it->position(0)), (*it)[2].str(), (*it)[1].str());
  }
}

std::string trimmed(std::string_view line) {
  const size_t begin = line.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  const size_t end = line.find_last_not_of(" \t\r");
  return std::string(line.substr(begin, end - begin + 1));
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    out.emplace_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

std::vector<std::string> non_blank_trimmed(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const std::string& line : lines) {
    std::string t = trimmed(line);
    if (!t.empty()) out.push_back(std::move(t));
  }
  return out;
}

// Rule c: "as `FILE` has it:" and the fenced block after it.
void find_excerpts(std::string_view text, References& found) {
  static const std::regex introduction(R"(as `([^`\s]+)` has it:\s*$)");
  const std::vector<std::string> lines = split_lines(text);
  for (size_t k = 0; k < lines.size(); ++k) {
    std::smatch match;
    if (!std::regex_search(lines[k], match, introduction)) continue;
    Excerpt excerpt{static_cast<int>(k + 1), match[1].str(), {}};
    size_t fence = k + 1;
    while (fence < lines.size() && trimmed(lines[fence]).empty()) ++fence;
    if (fence < lines.size() && starts_with(trimmed(lines[fence]), "```")) {
      for (size_t j = fence + 1; j < lines.size() && !starts_with(trimmed(lines[j]), "```"); ++j)
        excerpt.lines.push_back(lines[j]);
    }
    found.excerpts.push_back(std::move(excerpt));
  }
}

// Where `block` sits in `file` line by line; the first block line that is
// nowhere in the file, or empty when every line is there but not together.
std::optional<std::string> excerpt_mismatch(const std::vector<std::string>& block,
                                            std::string_view file_text) {
  const std::vector<std::string> wanted = non_blank_trimmed(block);
  const std::vector<std::string> have = non_blank_trimmed(split_lines(file_text));
  if (wanted.empty()) return std::string("the code block after it is missing or empty");
  if (std::search(have.begin(), have.end(), wanted.begin(), wanted.end()) != have.end())
    return std::nullopt;
  for (const std::string& line : wanted)
    if (std::find(have.begin(), have.end(), line) == have.end())
      return fmt::format("the excerpt's line `{}` is not in it", line);
  return std::string("the excerpt's lines are all in it, but not together in this order");
}

bool is_word_boundary(std::string_view text, size_t at) {
  return at >= text.size() || !is_identifier_char(text[at]);
}

std::string_view word_before(std::string_view text, size_t at) {
  size_t end = at;
  while (end > 0 && (text[end - 1] == ' ' || text[end - 1] == '\t' || text[end - 1] == '\n')) --end;
  size_t begin = end;
  while (begin > 0 && (is_identifier_char(text[begin - 1]) || text[begin - 1] == '#')) --begin;
  return text.substr(begin, end - begin);
}

bool mentions_word(std::string_view code, std::string_view word) {
  for (size_t at = code.find(word); at != std::string_view::npos; at = code.find(word, at + 1)) {
    if ((at == 0 || !is_identifier_char(code[at - 1])) && is_word_boundary(code, at + word.size()))
      return true;
  }
  return false;
}

}  // namespace

std::string to_string(const BadReference& bad) {
  return fmt::format("{}:{}: {}", bad.file, bad.line, bad.message);
}

bool is_checked_text(std::string_view path) {
  return is_markdown(path) || is_cpp(path) || is_hash_commented(path);
}

std::string readable_part(std::string_view path, std::string_view text) {
  if (is_markdown(path)) return without_urls(std::string(text));
  if (is_hash_commented(path)) return without_urls(hash_comments(text));
  if (!is_cpp(path)) return std::string(text.size(), ' ');
  const std::string code = blank_comments(text);
  std::string comments(text.size(), ' ');
  for (size_t k = 0; k < text.size(); ++k) {
    if (text[k] == '\n')
      comments[k] = '\n';
    else if (code[k] != text[k])
      comments[k] = text[k];
  }
  return without_urls(std::move(comments));
}

References find_references(const SourceFile& file) {
  References found;
  if (!is_checked_text(file.path)) return found;
  const std::string text = readable_part(file.path, file.text);
  const Lines lines(text);
  find_paths(text, lines, found);
  if (is_markdown(file.path)) {
    find_links(file.path, text, lines, found);
    find_excerpts(text, found);
  }
  if (text.find('`') != std::string::npos) find_names(text, lines, found);
  return found;
}

bool defines(std::string_view file_text, std::string_view name) {
  const std::string code = blank_comments_and_literals(file_text);
  if (starts_with(name, "operator")) return code.find(name) != std::string::npos;
  std::string_view last = name;
  if (const size_t colons = name.rfind("::"); colons != std::string_view::npos) {
    last = name.substr(colons + 2);
    // The qualifier (a class or a namespace) must be named in the file too.
    const std::string_view qualifier = name.substr(0, colons);
    const size_t inner = qualifier.rfind("::");
    if (!mentions_word(code,
                       inner == std::string_view::npos ? qualifier : qualifier.substr(inner + 2)))
      return false;
  }
  const std::string_view view(code);
  for (size_t at = view.find(last); at != std::string_view::npos; at = view.find(last, at + 1)) {
    if ((at > 0 && is_identifier_char(view[at - 1])) || !is_word_boundary(view, at + last.size()))
      continue;
    size_t next = at + last.size();
    while (next < view.size() && std::isspace(static_cast<unsigned char>(view[next]))) ++next;
    if (next < view.size() && std::string_view("({<=").find(view[next]) != std::string_view::npos)
      return true;
    const std::string_view before = word_before(view, at);
    for (std::string_view keyword :
         {"struct", "class", "enum", "union", "using", "namespace", "typedef", "#define", "def"})
      if (before == keyword) return true;
  }
  return false;
}

std::vector<BadReference> find_bad_references(const std::vector<SourceFile>& files,
                                              const Repository& repository) {
  std::vector<BadReference> bad;
  for (const SourceFile& file : files) {
    const References found = find_references(file);
    for (const PathReference& reference : found.paths) {
      const bool exists = reference.folder ? repository.is_folder(reference.path)
                                           : repository.is_file(reference.path) ||
                                                 repository.is_folder(reference.path) ||
                                                 // a program or a module named without its
                                                 // extension: examples/nw_regression, plot/svg_plot
                                                 (extension_of(reference.path).empty() &&
                                                  (repository.is_file(reference.path + ".cpp") ||
                                                   repository.is_file(reference.path + ".hpp")));
      if (!exists)
        bad.push_back(
            {file.path, reference.line,
             fmt::format("`{}{}` does not exist", reference.path, reference.folder ? "/" : "")});
    }
    for (const NameReference& reference : found.names) {
      const std::optional<std::string> text = repository.read(reference.file);
      if (!text) continue;  // the path itself is reported above
      if (!defines(*text, reference.name))
        bad.push_back({file.path, reference.line,
                       fmt::format("`{}` does not define `{}`", reference.file, reference.name)});
    }
    for (const Excerpt& excerpt : found.excerpts) {
      const std::optional<std::string> text = repository.read(excerpt.file);
      if (!text) {
        bad.push_back({file.path, excerpt.line,
                       fmt::format("the excerpt's file `{}` does not exist", excerpt.file)});
        continue;
      }
      if (const std::optional<std::string> mismatch = excerpt_mismatch(excerpt.lines, *text))
        bad.push_back(
            {file.path, excerpt.line,
             fmt::format("the excerpt of `{}` is not the code: {}", excerpt.file, *mismatch)});
    }
  }
  std::sort(bad.begin(), bad.end(), [](const BadReference& a, const BadReference& b) {
    return std::tie(a.file, a.line, a.message) < std::tie(b.file, b.line, b.message);
  });
  bad.erase(std::unique(bad.begin(), bad.end()), bad.end());
  return bad;
}

}  // namespace attograd::architecture
