// tests/architecture/layering.cpp — see layering.hpp for the rule.
//
// Not a C++ parser: a text scanner that knows just enough — comments,
// literals, braces, and the keywords that declare a name — and errs towards
// reporting nothing when unsure (a name a lower layer defines itself, even
// in a function or as a template parameter, is never an upward use there).
#include "tests/architecture/layering.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <tuple>
#include <utility>

namespace attograd::architecture {

namespace fs = std::filesystem;

namespace {

// The project's root namespace: declared by every layer, so it names none.
constexpr std::string_view kRootNamespace = "attograd";
// Other libraries' namespaces. A qualified name starting with one of these is
// theirs, even when a layer reopens it (`namespace std { template <> struct
// hash<…> }`).
const std::set<std::string, std::less<>> kForeignNamespaces = {"std", "fmt", "xsimd", "nlohmann"};

bool is_identifier_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// --- Blanking comments and literals ----------------------------------------

std::string blank(std::string_view text, bool blank_literals) {
  std::string out(text);
  const size_t n = text.size();
  auto blank_range = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < n; ++k)
      if (out[k] != '\n') out[k] = ' ';
  };
  // The end (one past the closing quote) of the quoted literal opening at `i`.
  auto quoted_end = [&](size_t i, char quote) {
    size_t j = i + 1;
    while (j < n && text[j] != quote && text[j] != '\n') j += text[j] == '\\' ? 2 : 1;
    return j < n && text[j] == quote ? j + 1 : std::min(j, n);
  };
  size_t i = 0;
  while (i < n) {
    const char c = text[i];
    const char next = i + 1 < n ? text[i + 1] : '\0';
    if (c == '/' && next == '/') {
      const size_t end = std::min(text.find('\n', i), n);
      blank_range(i, end);
      i = end;
    } else if (c == '/' && next == '*') {
      const size_t close = text.find("*/", i + 2);
      const size_t end = close == std::string_view::npos ? n : close + 2;
      blank_range(i, end);
      i = end;
    } else if (c == '"') {
      // A raw string: R"delim( … )delim", maybe after an encoding prefix.
      size_t prefix = i;
      while (prefix > 0 && is_identifier_char(text[prefix - 1])) --prefix;
      const std::string_view word = text.substr(prefix, i - prefix);
      const bool raw = word == "R" || word == "LR" || word == "uR" || word == "UR" || word == "u8R";
      const size_t open = raw ? text.find('(', i + 1) : std::string_view::npos;
      if (raw && open != std::string_view::npos) {
        const std::string closing = fmt::format("){}\"", text.substr(i + 1, open - i - 1));
        const size_t close = text.find(closing, open + 1);
        const size_t end = close == std::string_view::npos ? n : close + closing.size();
        if (blank_literals) {
          blank_range(prefix, i);  // the R is not a name
          blank_range(i + 1, end - 1);
        }
        i = end;
      } else {
        const size_t end = quoted_end(i, '"');
        if (blank_literals) blank_range(i + 1, end - 1);
        i = end;
      }
    } else if (c == '\'') {
      // 1'000'000: a digit separator, not a character literal.
      size_t start = i;
      while (start > 0 && is_identifier_char(text[start - 1])) --start;
      if (start < i && std::isdigit(static_cast<unsigned char>(text[start]))) {
        ++i;
        continue;
      }
      const size_t end = quoted_end(i, '\'');
      if (blank_literals) blank_range(i + 1, end - 1);
      i = end;
    } else {
      ++i;
    }
  }
  return out;
}

// --- Tokens ------------------------------------------------------------------

enum class Kind { kIdentifier, kNumber, kLiteral, kPunctuation };

struct Token {
  Kind kind;
  std::string text;
  size_t offset;
  bool in_directive;  // part of a preprocessor line
  bool in_include;    // part of an #include line
};

// Tokens of text whose comments and literals are already blanked.
std::vector<Token> tokenize(std::string_view code) {
  std::vector<Token> tokens;
  const size_t n = code.size();
  bool line_start = true;     // only blanks since the last newline
  bool in_directive = false;  // inside a preprocessor line
  bool in_include = false;    // inside an #include line
  size_t i = 0;
  while (i < n) {
    const char c = code[i];
    if (c == '\n') {
      const bool continued = i > 0 && code[i - 1] == '\\';
      if (!continued) in_directive = in_include = false;
      line_start = true;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c)) || c == '\\') {
      ++i;
      continue;
    }
    if (c == '#' && line_start) {
      in_directive = true;
      size_t j = i + 1;
      while (j < n && (code[j] == ' ' || code[j] == '\t')) ++j;
      in_include = code.substr(j, 7) == "include";
    }
    line_start = false;
    const size_t start = i;
    Kind kind = Kind::kPunctuation;
    if (is_identifier_start(c)) {
      kind = Kind::kIdentifier;
      while (i < n && is_identifier_char(code[i])) ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      kind = Kind::kNumber;
      while (i < n && (is_identifier_char(code[i]) || code[i] == '.' || code[i] == '\'')) ++i;
    } else if (c == '"' || c == '\'') {
      kind = Kind::kLiteral;
      ++i;
      while (i < n && code[i] != c && code[i] != '\n') ++i;
      if (i < n && code[i] == c) ++i;
    } else if (code.substr(i, 3) == "...") {
      i += 3;
    } else if (code.substr(i, 2) == "::" || code.substr(i, 2) == "->") {
      i += 2;
    } else {
      ++i;
    }
    tokens.push_back(
        {kind, std::string(code.substr(start, i - start)), start, in_directive, in_include});
  }
  return tokens;
}

// --- What one file declares ---------------------------------------------------

struct TypeDeclaration {
  std::string name;
  bool definition;  // false: a forward declaration `struct Node;`
};

struct NamespaceDeclaration {
  std::string name;
  bool in_root;  // inside `namespace attograd` (a project namespace)
};

struct FileFacts {
  std::vector<TypeDeclaration> namespace_scope_types;
  std::set<std::string> defined_anywhere;  // types at any scope, template parameters
  std::vector<NamespaceDeclaration> namespaces;
  std::vector<std::string> namespace_aliases;
};

FileFacts scan_declarations(const std::vector<Token>& all_tokens) {
  std::vector<const Token*> tokens;
  for (const Token& token : all_tokens)
    if (!token.in_directive) tokens.push_back(&token);
  static const Token kEnd{Kind::kPunctuation, "", 0, false, false};
  auto at = [&](size_t k) -> const Token& { return k < tokens.size() ? *tokens[k] : kEnd; };
  auto is = [&](size_t k, std::string_view text) { return at(k).text == text; };
  auto is_identifier = [&](size_t k) { return at(k).kind == Kind::kIdentifier; };
  // Skips `[[…]]` and `alignas(…)` from k; returns the next index.
  auto skip_attributes = [&](size_t k) {
    for (;;) {
      if (is(k, "[") && is(k + 1, "[")) {
        while (k < tokens.size() && !(is(k, "]") && is(k + 1, "]"))) ++k;
        k += 2;
      } else if (is(k, "alignas") && is(k + 1, "(")) {
        int depth = 0;
        do {
          if (is(k, "(")) ++depth;
          if (is(k, ")")) --depth;
          ++k;
        } while (k < tokens.size() && depth > 0);
      } else {
        return k;
      }
    }
  };

  struct Brace {
    bool is_namespace;
    bool in_root;
  };
  std::vector<Brace> braces;
  std::map<size_t, Brace> namespace_braces;  // token index of a `{` -> its kind
  auto at_namespace_scope = [&] {
    return std::all_of(braces.begin(), braces.end(), [](const Brace& b) { return b.is_namespace; });
  };
  auto in_root = [&] { return !braces.empty() && braces.back().in_root; };

  FileFacts facts;
  auto record_type = [&](const std::string& name, bool definition) {
    if (definition) facts.defined_anywhere.insert(name);
    if (at_namespace_scope()) facts.namespace_scope_types.push_back({name, definition});
  };

  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& token = at(i);
    if (token.text == "{") {
      const auto found = namespace_braces.find(i);
      braces.push_back(found != namespace_braces.end() ? found->second : Brace{false, in_root()});
    } else if (token.text == "}") {
      if (!braces.empty()) braces.pop_back();
    } else if (token.text == "namespace") {
      std::vector<std::string> names;
      size_t j = i + 1;
      while (is_identifier(j)) {
        names.push_back(at(j).text);
        ++j;
        if (!is(j, "::")) break;
        ++j;
      }
      if (is(j, "{")) {
        const bool opens_root = !names.empty() && names.front() == kRootNamespace;
        for (size_t k = 0; k < names.size(); ++k)
          facts.namespaces.push_back({names[k], in_root() || (opens_root && k > 0)});
        namespace_braces[j] = Brace{true, in_root() || opens_root};
      } else if (is(j, "=") && names.size() == 1) {
        facts.namespace_aliases.push_back(names.front());
      }
    } else if (token.text == "extern" && at(i + 1).kind == Kind::kLiteral && is(i + 2, "{")) {
      namespace_braces[i + 2] = Brace{true, in_root()};  // extern "C" { … }
    } else if ((token.text == "class" || token.text == "struct" || token.text == "union" ||
                token.text == "enum") &&
               !(i > 0 && is(i - 1, "enum"))) {
      size_t j = i + 1;
      if (token.text == "enum" && (is(j, "class") || is(j, "struct"))) ++j;
      j = skip_attributes(j);
      if (is(j, "...")) ++j;                               // template <class... Ts>
      if (!is_identifier(j) || is(j + 1, "::")) continue;  // anonymous, or A::B out of line
      const std::string& name = at(j).text;
      size_t after = j + 1;
      if (is(after, "final")) ++after;
      if (is(after, "{") || is(after, ":")) {
        record_type(name, true);
      } else if (is(after, ";")) {
        record_type(name, false);
      } else if (is(after, ",") || is(after, ">") || is(after, "=")) {
        facts.defined_anywhere.insert(name);  // a template parameter
      }
    } else if (token.text == "typename") {
      size_t j = i + 1;
      if (is(j, "...")) ++j;
      if (is_identifier(j) && (is(j + 1, ",") || is(j + 1, ">") || is(j + 1, "=")))
        facts.defined_anywhere.insert(at(j).text);
    } else if (token.text == "using" && is_identifier(i + 1) && is(i + 2, "=")) {
      record_type(at(i + 1).text, true);
    } else if (token.text == "typedef") {
      // typedef … Name;  or  typedef R (*Name)(…);
      std::string name;
      int depth = 0;
      for (size_t j = i + 1; j < tokens.size() && !(depth == 0 && is(j, ";")); ++j) {
        if (is(j, "(") && is(j + 1, "*") && is_identifier(j + 2) && name.empty()) {
          name = at(j + 2).text;
          break;
        }
        if (is(j, "(") || is(j, "{") || is(j, "[")) ++depth;
        if (is(j, ")") || is(j, "}") || is(j, "]")) --depth;
        if (depth == 0 && is_identifier(j)) name = at(j).text;
      }
      if (!name.empty()) record_type(name, true);
    }
  }
  return facts;
}

// --- Qualified names in the raw text ------------------------------------------

struct QualifiedName {
  size_t begin, end;  // offsets in the text
  std::vector<std::string> parts;
  size_t qualifiers;  // how many leading parts are followed by `::`
};

// Every `a::b::c` (or `a::`) in `text`, comments and literals included.
std::vector<QualifiedName> find_qualified_names(std::string_view text) {
  std::vector<QualifiedName> found;
  const size_t n = text.size();
  size_t i = 0;
  auto read_word = [&](size_t k) {
    while (k < n && is_identifier_char(text[k])) ++k;
    return k;
  };
  while (i < n) {
    if (!is_identifier_char(text[i])) {
      ++i;
      continue;
    }
    if (!is_identifier_start(text[i])) {  // a number
      i = read_word(i);
      continue;
    }
    QualifiedName name{i, 0, {}, 0};
    size_t j = read_word(i);
    name.parts.emplace_back(text.substr(i, j - i));
    while (text.substr(j, 2) == "::") {
      ++name.qualifiers;
      j += 2;
      if (j >= n || !is_identifier_start(text[j])) break;
      const size_t word_end = read_word(j);
      name.parts.emplace_back(text.substr(j, word_end - j));
      j = word_end;
    }
    name.end = j;
    if (name.qualifiers > 0) found.push_back(std::move(name));
    i = j;
  }
  return found;
}

// --- Putting it together -------------------------------------------------------

std::string layer_folder(int layer) {
  return fmt::format("{}/", kLayers[static_cast<size_t>(layer)]);
}

// "tensor/", "tensor/ and autograd/", "tensor/, autograd/ and nn/", …
std::string allowed_layers(int layer) {
  std::string allowed = layer_folder(0);
  for (int lower = 1; lower <= layer; ++lower)
    allowed += (lower == layer ? " and " : ", ") + layer_folder(lower);
  return allowed;
}

std::string lexically_normal(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, slash - start);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.emplace_back(part);
    }
    start = slash + 1;
  }
  std::string joined;
  for (const std::string& part : parts) joined += (joined.empty() ? "" : "/") + part;
  return joined;
}

struct ScannedFile {
  const SourceFile* file = nullptr;
  int layer = -1;
  bool header = false;
  std::string code;           // comments and literals blanked
  std::vector<Token> tokens;  // of code
  std::vector<size_t> line_starts;
  FileFacts facts;

  int line_of(size_t offset) const {
    return static_cast<int>(std::upper_bound(line_starts.begin(), line_starts.end(), offset) -
                            line_starts.begin());
  }
};

std::vector<ScannedFile> scan(const std::vector<SourceFile>& files) {
  std::vector<ScannedFile> scanned;
  for (const SourceFile& file : files) {
    const int layer = layer_of(file.path);
    if (layer < 0) continue;
    ScannedFile s;
    s.file = &file;
    s.layer = layer;
    s.header = file.path.ends_with(".hpp") || file.path.ends_with(".h");
    s.code = blank_comments_and_literals(file.text);
    s.line_starts = {0};
    for (size_t k = 0; k < file.text.size(); ++k)
      if (file.text[k] == '\n') s.line_starts.push_back(k + 1);
    s.tokens = tokenize(s.code);
    s.facts = scan_declarations(s.tokens);
    scanned.push_back(std::move(s));
  }
  std::sort(scanned.begin(), scanned.end(),
            [](const ScannedFile& a, const ScannedFile& b) { return a.file->path < b.file->path; });
  return scanned;
}

// Keeps the lowest layer (and, in it, the first header) for `name`.
void claim(std::map<std::string, Owner>& owners, const std::string& name, int layer,
           const std::string& header) {
  const auto found = owners.find(name);
  if (found == owners.end() || layer < found->second.layer) owners[name] = Owner{layer, header};
}

struct Learned {
  LayerMap map;
  std::set<std::string> shared_namespaces;  // project namespaces naming no layer
};

Learned learn(const std::vector<ScannedFile>& files) {
  Learned learned;
  LayerMap& map = learned.map;
  // Types: defined ones first; a name only ever forward-declared belongs to
  // the lowest layer declaring it.
  std::map<std::string, Owner> forward_only;
  for (const ScannedFile& f : files) {
    if (!f.header) continue;
    for (const TypeDeclaration& type : f.facts.namespace_scope_types)
      claim(type.definition ? map.types : forward_only, type.name, f.layer, f.file->path);
  }
  for (const auto& [name, owner] : forward_only)
    if (!map.types.contains(name)) map.types[name] = owner;

  // Namespaces: every layer any file declares (or aliases) a name in; a name
  // names a layer only when that layer alone has it, in a header, in the root.
  std::map<std::string, std::set<int>> layers_having;
  std::map<std::string, Owner> declared_in_headers;
  for (const ScannedFile& f : files) {
    for (const NamespaceDeclaration& ns : f.facts.namespaces) {
      layers_having[ns.name].insert(f.layer);
      if (f.header && ns.in_root && ns.name != kRootNamespace)
        claim(declared_in_headers, ns.name, f.layer, f.file->path);
    }
    for (const std::string& alias : f.facts.namespace_aliases) layers_having[alias].insert(f.layer);
  }
  for (const auto& [name, owner] : declared_in_headers)
    if (layers_having[name].size() == 1) map.namespaces[name] = owner;
  for (const auto& [name, layers] : layers_having)
    if (!map.namespaces.contains(name) && !kForeignNamespaces.contains(name))
      learned.shared_namespaces.insert(name);
  return learned;
}

}  // namespace

std::string to_string(const Violation& violation) {
  return fmt::format("{}:{}: {}", violation.file, violation.line, violation.message);
}

int layer_of(std::string_view path) {
  const std::string_view top = path.substr(0, path.find('/'));
  if (top.size() == path.size()) return -1;  // a file at the root
  for (size_t layer = 0; layer < kLayers.size(); ++layer)
    if (kLayers[layer] == top) return static_cast<int>(layer);
  return -1;
}

std::string blank_comments(std::string_view text) { return blank(text, false); }
std::string blank_comments_and_literals(std::string_view text) { return blank(text, true); }

LayerMap learn_layers(const std::vector<SourceFile>& files) { return learn(scan(files)).map; }

std::vector<SourceFile> load_source_tree(const std::string& root) {
  std::vector<SourceFile> files;
  for (std::string_view layer : kLayers) {
    const fs::path folder = fs::path(root) / layer;
    if (!fs::is_directory(folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(folder)) {
      const std::string extension = entry.path().extension().string();
      if (!entry.is_regular_file() || (extension != ".hpp" && extension != ".cpp")) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      files.push_back({fs::relative(entry.path(), root).generic_string(),
                       {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()}});
    }
  }
  std::sort(files.begin(), files.end(),
            [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; });
  return files;
}

std::vector<Include> find_includes(const SourceFile& file) {
  std::vector<Include> includes;
  const std::string code = blank_comments(file.text);
  const std::string folder = file.path.substr(0, file.path.rfind('/') + 1);
  size_t begin = 0;
  for (int line = 1; begin < code.size(); ++line) {
    const size_t end = std::min(code.find('\n', begin), code.size());
    std::string_view text = std::string_view(code).substr(begin, end - begin);
    begin = end + 1;
    const size_t hash = text.find_first_not_of(" \t");
    if (hash == std::string_view::npos || text[hash] != '#') continue;
    text.remove_prefix(hash + 1);
    text.remove_prefix(std::min(text.find_first_not_of(" \t"), text.size()));
    if (!text.starts_with("include")) continue;
    const size_t open = text.find('"');
    const size_t close = text.find('"', open + 1);
    if (open == std::string_view::npos || close == std::string_view::npos) continue;
    std::string written(text.substr(open + 1, close - open - 1));
    std::string path = written.starts_with(".") ? lexically_normal(folder + written) : written;
    includes.push_back({line, std::move(written), std::move(path)});
  }
  return includes;
}

std::vector<Violation> find_layering_violations(const std::vector<SourceFile>& files) {
  const std::vector<ScannedFile> scanned = scan(files);
  const Learned learned = learn(scanned);
  const LayerMap& map = learned.map;

  // The lowest layer defining each name at namespace scope in any file (.cpp
  // included): there, and above, the name is the layer's own. A name defined
  // deeper (nested, local, a template parameter) is its own file's only.
  std::map<std::string, int> lowest_definition;
  for (const ScannedFile& f : scanned)
    for (const TypeDeclaration& type : f.facts.namespace_scope_types) {
      if (!type.definition) continue;
      const auto found = lowest_definition.find(type.name);
      if (found == lowest_definition.end() || f.layer < found->second)
        lowest_definition[type.name] = f.layer;
    }

  std::vector<Violation> violations;
  for (const ScannedFile& f : scanned) {
    const std::string& path = f.file->path;
    const std::string allowed = allowed_layers(f.layer);
    std::set<std::pair<int, std::string>> reported;  // (line, what) once per line
    auto report = [&](size_t offset, const std::string& what, std::string message) {
      const int line = f.line_of(offset);
      if (reported.insert({line, what}).second)
        violations.push_back({path, line, std::move(message)});
    };

    // a. Includes.
    for (const Include& include : find_includes(*f.file)) {
      const int target = layer_of(include.path);
      if (target > f.layer)
        report(f.line_starts[static_cast<size_t>(include.line - 1)], "#include " + include.written,
               fmt::format("includes \"{}\", in {}; {} may use only {}", include.written,
                           layer_folder(target), layer_folder(f.layer), allowed));
    }

    // b. Qualified names, in code, comments and literals alike.
    std::vector<std::pair<size_t, size_t>> reported_spans;
    for (const QualifiedName& name : find_qualified_names(f.file->text)) {
      for (size_t k = 0; k < name.qualifiers; ++k) {
        const std::string& part = name.parts[k];
        if (part == kRootNamespace) continue;
        const auto owner = map.namespaces.find(part);
        if (owner != map.namespaces.end()) {
          if (owner->second.layer > f.layer) {
            const std::string written = f.file->text.substr(name.begin, name.end - name.begin);
            // Cite the header of the type named next (nn::GRU -> nn/gru.hpp)
            // when there is one; else the namespace's first header.
            const auto type =
                k + 1 < name.parts.size() ? map.types.find(name.parts[k + 1]) : map.types.end();
            const std::string where =
                type != map.types.end() && type->second.layer == owner->second.layer
                    ? type->second.header
                    : fmt::format("namespace {}, {}", part, owner->second.header);
            report(name.begin, written,
                   fmt::format("names '{}', declared in {} ({}); {} may use only {}", written,
                               layer_folder(owner->second.layer), where, layer_folder(f.layer),
                               allowed));
            reported_spans.emplace_back(name.begin, name.end);
          }
          break;
        }
        // A project namespace several layers share says nothing; go on to
        // the next part. Anything else (std, a class) ends the search.
        if (!learned.shared_namespaces.contains(part)) break;
      }
    }

    // c. Type names, in code only.
    for (size_t k = 0; k < f.tokens.size(); ++k) {
      const Token& token = f.tokens[k];
      if (token.kind != Kind::kIdentifier || token.in_include) continue;
      if (k > 0 && (f.tokens[k - 1].text == "." || f.tokens[k - 1].text == "->")) continue;
      const auto owner = map.types.find(token.text);
      if (owner == map.types.end() || owner->second.layer <= f.layer) continue;
      const auto own = lowest_definition.find(token.text);
      if (own != lowest_definition.end() && own->second <= f.layer) continue;
      if (f.facts.defined_anywhere.contains(token.text)) continue;
      // Part of a name already reported under b.
      if (std::any_of(reported_spans.begin(), reported_spans.end(), [&](const auto& span) {
            return span.first <= token.offset && token.offset < span.second;
          }))
        continue;
      // After `q::`: a member of q when q is a class (q itself is checked),
      // another library's when q is std or fmt; checked only when q is a
      // project namespace (attograd::Node, detail::Node).
      if (k >= 2 && f.tokens[k - 1].text == "::" && f.tokens[k - 2].kind == Kind::kIdentifier) {
        const std::string& qualifier = f.tokens[k - 2].text;
        if (qualifier != kRootNamespace && !map.namespaces.contains(qualifier) &&
            !learned.shared_namespaces.contains(qualifier))
          continue;
      }
      report(token.offset, token.text,
             fmt::format("names '{}', declared in {} ({}); {} may use only {}", token.text,
                         layer_folder(owner->second.layer), owner->second.header,
                         layer_folder(f.layer), allowed));
    }
  }
  std::sort(violations.begin(), violations.end(), [](const Violation& a, const Violation& b) {
    return std::tie(a.file, a.line, a.message) < std::tie(b.file, b.line, b.message);
  });
  return violations;
}

}  // namespace attograd::architecture
