// examples/common/cli.cpp — parsing and help for cli.hpp.
#include "examples/common/cli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>
#include <limits>
#include <new>
#include <type_traits>

#include "nn/safetensors_messages.hpp"

namespace attograd::cli {

namespace {

// "a" or "an" for the word that follows.
std::string with_article(const std::string& phrase) {
  const bool vowel =
      !phrase.empty() && std::string_view("aeiou").find(phrase[0]) != std::string::npos;
  return fmt::format("{} {}", vowel ? "an" : "a", phrase);
}

// The noun phrase a value must match: "a positive integer", "a number in
// [0, 1]". `default_adjective` applies when there is no rule (std::size_t
// flags are "non-negative").
std::string expected_phrase(const std::string& noun, const Validator& rule,
                            const std::string& default_adjective = "") {
  const bool no_rule = rule.adjective.empty() && rule.condition.empty();
  const std::string& adjective = no_rule ? default_adjective : rule.adjective;
  std::string phrase = adjective.empty() ? noun : fmt::format("{} {}", adjective, noun);
  if (!rule.condition.empty()) phrase = fmt::format("{} {}", phrase, rule.condition);
  return with_article(phrase);
}

// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> previous(b.size() + 1), current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitute});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::string join(const std::vector<std::string>& words, std::string_view separator) {
  std::string joined;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) joined += separator;
    joined += words[i];
  }
  return joined;
}

// Reads a whole string as a T with std::from_chars (no locale, no leading
// spaces, no trailing junk). Returns the errc of the failure.
template <typename T>
std::errc read_number(const std::string& text, T& value) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') ++first;  // from_chars refuses a leading '+'
  const auto [end, error] = std::from_chars(first, last, value);
  if (error != std::errc()) return error;
  return end == last && first != last ? std::errc() : std::errc::invalid_argument;
}

// The value placeholder in --help, by the index of the bound type in
// Parser::Target: string, bool, three integers, two floating-point types.
template <typename Target>
std::string_view type_placeholder(const Target& target) {
  switch (target.index()) {
    case 0:
      return "<text>";
    case 1:
      return "";
    case 2:
    case 3:
    case 4:
      return "<int>";
    default:
      return "<number>";
  }
}

}  // namespace

Validator positive() {
  return {[](double value) { return value > 0; }, "positive", "", ""};
}

Validator non_negative() {
  return {[](double value) { return value >= 0; }, "non-negative", "", ""};
}

Validator at_least(double minimum) {
  return {[minimum](double value) { return value >= minimum; }, "", fmt::format(">= {}", minimum),
          ""};
}

Validator in_range(double low, double high) {
  check(low <= high, "cli::in_range: low {} is above high {}", low, high);
  return {[low, high](double value) { return low <= value && value <= high; }, "",
          fmt::format("in [{}, {}]", low, high), ""};
}

Validator size_at_most(double maximum) {
  return {[maximum](double value) { return value >= 1 && value <= maximum; }, "positive",
          fmt::format("at most {}", maximum), fmt::format("in [1, {}]", maximum)};
}

Validator count_at_most(double maximum) {
  return {[maximum](double value) { return value >= 0 && value <= maximum; }, "non-negative",
          fmt::format("at most {}", maximum), fmt::format("in [0, {}]", maximum)};
}

Parser::Parser(std::string program, std::string description)
    : program_(std::move(program)), description_(std::move(description)) {}

Parser::~Parser() = default;

Parser& Parser::flag(std::string name, std::string& target, std::string help) {
  return add(std::move(name), std::move(help), &target, {});
}
Parser& Parser::flag(std::string name, bool& target, std::string help) {
  return add(std::move(name), std::move(help), &target, {});
}
Parser& Parser::flag(std::string name, int& target, std::string help, Validator rule) {
  return add(std::move(name), std::move(help), &target, std::move(rule));
}
Parser& Parser::flag(std::string name, std::int64_t& target, std::string help, Validator rule) {
  return add(std::move(name), std::move(help), &target, std::move(rule));
}
Parser& Parser::flag(std::string name, std::size_t& target, std::string help, Validator rule) {
  return add(std::move(name), std::move(help), &target, std::move(rule));
}
Parser& Parser::flag(std::string name, float& target, std::string help, Validator rule) {
  return add(std::move(name), std::move(help), &target, std::move(rule));
}
Parser& Parser::flag(std::string name, double& target, std::string help, Validator rule) {
  return add(std::move(name), std::move(help), &target, std::move(rule));
}

Parser& Parser::choice(std::string name, std::string& target, std::vector<std::string> choices,
                       std::string help) {
  check(!choices.empty(), "cli: --{} needs at least one choice", name);
  check(std::find(choices.begin(), choices.end(), target) != choices.end(),
        "cli: the default '{}' of --{} is not one of {}", target, name, join(choices, "|"));
  return add(std::move(name), std::move(help), &target, {}, std::move(choices));
}

Parser& Parser::add(std::string name, std::string help, Target target, Validator rule,
                    std::vector<std::string> choices) {
  const bool well_formed =
      !name.empty() && name[0] != '-' && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
      });
  check(well_formed,
        "cli: flag name '{}' must be lower-case letters, digits and '-' (no leading '-')", name);
  check(name != "help", "cli: --help is built in and cannot be declared");
  // A name may be declared once among the global flags and one command's.
  const Parser& root = parent_ ? *parent_ : *this;
  bool taken = root.find(name) != nullptr || find(name) != nullptr;
  if (!parent_) {
    for (const auto& [command, entry] : commands_) taken = taken || entry.parser->find(name);
  }
  check(!taken, "cli: --{} is declared twice (commands cannot reuse a global flag's name)", name);

  std::string default_text = std::visit(
      [](auto* value) -> std::string {
        using T = std::remove_pointer_t<decltype(value)>;
        if constexpr (std::is_same_v<T, bool>) {
          return *value ? "true" : "";
        } else {
          return fmt::format("{}", *value);
        }
      },
      target);
  flags_.push_back({std::move(name), std::move(help), target, std::move(choices), std::move(rule),
                    std::move(default_text)});
  return *this;
}

Parser& Parser::add_command(std::string name, std::string help) {
  check(parent_ == nullptr, "cli: commands cannot have commands of their own ('{}')", name);
  check(!name.empty() && name[0] != '-',
        "cli: command name '{}' must not be empty or start with '-'", name);
  check(find_command(name) == nullptr, "cli: command '{}' is declared twice", name);
  auto parser = std::make_unique<Parser>(fmt::format("{} {}", program_, name), help);
  parser->name_ = name;
  parser->parent_ = this;
  Parser& command = *parser;
  commands_.push_back({std::move(name), Command{std::move(help), std::move(parser)}});
  return command;
}

const std::string& Parser::command() const { return chosen_command_; }

const std::set<std::string>& Parser::given() const { return given_; }

const Parser::Flag* Parser::find(const std::string& name) const {
  for (const Flag& flag : flags_) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

const Parser* Parser::find_command(const std::string& name) const {
  for (const auto& [command, entry] : commands_) {
    if (command == name) return entry.parser.get();
  }
  return nullptr;
}

bool Parser::parse(int argc, const char* const* argv) {
  std::vector<std::string> arguments;
  for (int i = 1; i < argc; ++i) arguments.emplace_back(argv[i]);
  return parse(arguments);
}

bool Parser::parse(const std::vector<std::string>& arguments) {
  check(parent_ == nullptr, "cli: parse the top-level parser, not the command '{}'", name_);
  chosen_command_.clear();
  given_.clear();
  help_scope_ = this;
  const Parser* scope = this;  // the chosen command once it is known
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const std::string& argument = arguments[i];
    if (argument == "--help" || argument == "-h") {
      help_scope_ = scope;
      return false;
    }
    if (argument.size() > 2 && argument.starts_with("--")) {
      const std::size_t equals = argument.find('=');
      const std::string name =
          argument.substr(2, equals == std::string::npos ? equals : equals - 2);
      const Flag* flag = scope->find(name);
      if (!flag && scope != this) flag = find(name);
      if (!flag) throw UsageError(unknown_flag_message(name, *scope));
      given_.insert(name);
      if (equals != std::string::npos) {
        assign(*flag, argument.substr(equals + 1));
      } else if (std::holds_alternative<bool*>(flag->target)) {
        assign(*flag, "true");
      } else if (i + 1 < arguments.size() && !arguments[i + 1].starts_with("--")) {
        assign(*flag, arguments[++i]);
      } else {
        throw UsageError(
            fmt::format("--{}: missing value (expected {})", name, expected_value(*flag)));
      }
      continue;
    }
    if (argument.size() > 1 && argument[0] == '-' && argument != "--") {
      throw UsageError(fmt::format("unknown flag {} (flags start with --; see --help)", argument));
    }
    if (scope == this && !commands_.empty()) {
      const Parser* command = find_command(argument);
      if (!command) {
        throw UsageError(fmt::format("unknown command '{}': expected one of {} (see --help)",
                                     argument, join(command_names(), "|")));
      }
      scope = command;
      help_scope_ = command;
      chosen_command_ = argument;
      continue;
    }
    throw UsageError(fmt::format("unexpected argument '{}' (see --help)", argument));
  }
  if (!commands_.empty() && chosen_command_.empty()) {
    throw UsageError(fmt::format("missing command: expected one of {} (see --help)",
                                 join(command_names(), "|")));
  }
  return true;
}

std::vector<std::string> Parser::command_names() const {
  std::vector<std::string> names;
  for (const auto& [command, entry] : commands_) names.push_back(command);
  return names;
}

std::string Parser::unknown_flag_message(const std::string& name, const Parser& scope) const {
  // A flag of another command: say where it belongs.
  for (const auto& [command, entry] : commands_) {
    if (&scope == entry.parser.get() || !entry.parser->find(name)) continue;
    if (&scope == this) {
      return fmt::format("--{} is a flag of the command '{}'; put it after '{}' (see --help)", name,
                         command, command);
    }
    return fmt::format("--{} is a flag of the command '{}', not of '{}' (see --help)", name,
                       command, scope.name_);
  }
  // A near miss among the flags that are allowed here.
  std::string best;
  std::size_t best_distance = 3;  // suggest only within two edits
  for (const Parser* parser : {&scope, static_cast<const Parser*>(this)}) {
    for (const Flag& flag : parser->flags_) {
      const std::size_t distance = edit_distance(name, flag.name);
      if (distance < best_distance && distance < name.size()) {
        best = flag.name;
        best_distance = distance;
      }
    }
  }
  if (!best.empty()) {
    return fmt::format("unknown flag --{}; did you mean --{}? (see --help)", name, best);
  }
  return fmt::format("unknown flag --{} (see --help)", name);
}

std::string Parser::expected_value(const Flag& flag) {
  if (!flag.choices.empty()) return fmt::format("one of {}", join(flag.choices, "|"));
  return std::visit(
      [&flag](auto* target) -> std::string {
        using T = std::remove_pointer_t<decltype(target)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return "a value";
        } else if constexpr (std::is_same_v<T, bool>) {
          return "true or false";
        } else if constexpr (std::is_integral_v<T>) {
          return expected_phrase("integer", flag.rule, std::is_unsigned_v<T> ? "non-negative" : "");
        } else {
          return expected_phrase("number", flag.rule);
        }
      },
      flag.target);
}

void Parser::assign(const Flag& flag, const std::string& value) const {
  const std::string& name = flag.name;
  if (!flag.choices.empty()) {
    if (std::find(flag.choices.begin(), flag.choices.end(), value) == flag.choices.end()) {
      throw UsageError(
          fmt::format("--{}: '{}' is not one of {}", name, value, join(flag.choices, "|")));
    }
    *std::get<std::string*>(flag.target) = value;
    return;
  }
  std::visit(
      [&](auto* target) {
        using T = std::remove_pointer_t<decltype(target)>;
        if constexpr (std::is_same_v<T, std::string>) {
          // An empty path or name is always a slip (an unset shell variable,
          // `--resume ""`); leaving the flag out is how to ask for its default.
          if (value.empty()) {
            throw UsageError(fmt::format(
                "--{}: expected a value, got an empty string (leave the flag out for its default)",
                name));
          }
          *target = value;
        } else if constexpr (std::is_same_v<T, bool>) {
          if (value == "true" || value == "1" || value == "yes" || value == "on") {
            *target = true;
          } else if (value == "false" || value == "0" || value == "no" || value == "off") {
            *target = false;
          } else {
            throw UsageError(fmt::format("--{}: expected true or false, got '{}'", name, value));
          }
        } else {
          constexpr bool kIntegral = std::is_integral_v<T>;
          const std::string expected = expected_value(flag);
          T parsed{};
          const std::errc error = read_number(value, parsed);
          if (error == std::errc::result_out_of_range) {
            if constexpr (kIntegral) {
              // A rule with a limit names it; a plain integer names the type's range.
              if (!flag.rule.condition.empty()) {
                throw UsageError(fmt::format("--{}: expected {}, got '{}'", name, expected, value));
              }
              throw UsageError(fmt::format("--{}: expected {} between {} and {}, got '{}'", name,
                                           expected_phrase("integer", {}),
                                           std::numeric_limits<T>::min(),
                                           std::numeric_limits<T>::max(), value));
            } else {
              throw UsageError(
                  fmt::format("--{}: '{}' is out of range (expected {})", name, value, expected));
            }
          }
          if (error != std::errc()) {
            throw UsageError(fmt::format("--{}: expected {}, got '{}'", name, expected, value));
          }
          if constexpr (!kIntegral) {
            if (!std::isfinite(parsed)) {
              throw UsageError(
                  fmt::format("--{}: expected a finite number, got '{}'", name, value));
            }
          }
          if (flag.rule.accepts && !flag.rule.accepts(static_cast<double>(parsed))) {
            throw UsageError(fmt::format("--{}: expected {}, got '{}'", name, expected, value));
          }
          *target = parsed;
        }
      },
      flag.target);
}

std::string Parser::help() const { return (help_scope_ ? help_scope_ : this)->own_help(); }

std::string Parser::own_help() const {
  std::string text;
  const bool has_commands = !commands_.empty();
  text += fmt::format("Usage: {}{} [flags]\n", program_, has_commands ? " <command>" : "");
  if (!description_.empty()) text += fmt::format("\n{}\n", description_);

  // Left column ("  --epochs <int>"), then help, rule and default.
  struct Row {
    std::string left;
    std::string right;
  };
  const auto flag_rows = [](const std::vector<Flag>& flags) {
    std::vector<Row> rows;
    for (const Flag& flag : flags) {
      std::string left = fmt::format("  --{}", flag.name);
      if (!flag.choices.empty()) {
        left += fmt::format(" <{}>", join(flag.choices, "|"));
      } else if (const std::string_view placeholder = type_placeholder(flag.target);
                 !placeholder.empty()) {
        left += fmt::format(" {}", placeholder);
      }
      std::vector<std::string> notes;
      const std::string& rule = !flag.rule.range.empty()      ? flag.rule.range
                                : flag.rule.adjective.empty() ? flag.rule.condition
                                                              : flag.rule.adjective;
      if (!rule.empty()) notes.push_back(fmt::format("must be {}", rule));
      if (!flag.default_text.empty())
        notes.push_back(fmt::format("default: {}", flag.default_text));
      std::string right = flag.help;
      if (!notes.empty()) right += fmt::format(" ({})", join(notes, "; "));
      rows.push_back({std::move(left), std::move(right)});
    }
    return rows;
  };
  std::vector<Row> commands;
  for (const auto& [command, entry] : commands_)
    commands.push_back({fmt::format("  {}", command), entry.help});
  std::vector<Row> own = flag_rows(flags_);
  std::vector<Row> global = parent_ ? flag_rows(parent_->flags_) : std::vector<Row>{};
  (parent_ ? global : own).push_back({"  -h, --help", "show this help and exit"});

  // One help column for all sections; a left part too long for it puts its
  // help on the next line.
  constexpr std::size_t kMaxColumn = 34;
  std::size_t column = 0;
  for (const auto* rows : {&commands, &own, &global}) {
    for (const Row& row : *rows) {
      if (row.left.size() <= kMaxColumn) column = std::max(column, row.left.size() + 2);
    }
  }
  const auto print_rows = [&text, column](const std::string& heading,
                                          const std::vector<Row>& rows) {
    if (rows.empty()) return;
    text += fmt::format("\n{}:\n", heading);
    for (const Row& row : rows) {
      if (row.left.size() + 2 > column) {
        text += fmt::format("{}\n{:{}}{}\n", row.left, "", column, row.right);
      } else {
        text += fmt::format("{:{}}{}\n", row.left, column, row.right);
      }
    }
  };
  print_rows("Commands", commands);
  print_rows("Flags", own);
  print_rows("Global flags", global);
  if (has_commands) {
    text += fmt::format("\nRun '{} <command> --help' for the flags of a command.\n", program_);
  }
  return text;
}

namespace {

// The message on one printable line of at most kMaxMessageBytes.
std::string one_line(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  return nn::printable(message, kMaxMessageBytes);
}

}  // namespace

int run_main(Parser& parser, int argc, const char* const* argv, const std::function<int()>& body,
             std::ostream& out, std::ostream& err) {
  try {
    if (!parser.parse(argc, argv)) {
      out << parser.help() << std::flush;
      return 0;
    }
    return body();
  } catch (const Error& error) {  // UsageError too
    err << "error: " << one_line(error.what()) << std::endl;
    return 2;
  } catch (const std::bad_alloc&) {
    err << "error: out of memory: a size flag (see --help for the limits) or an input file asks "
           "for more memory than this machine has"
        << std::endl;
    return 2;
  } catch (const std::exception& error) {
    err << "error: " << one_line(error.what()) << std::endl;
    return 1;
  }
}

int run_main(Parser& parser, int argc, const char* const* argv, const std::function<int()>& body) {
  return run_main(parser, argc, argv, body, std::cout, std::cerr);
}

}  // namespace attograd::cli
