// examples/common/cli.hpp — the command lines of the example programs.
//
// Flags are bound to the fields of a plain struct, the program's Flags (the
// parser writes into the fields, so unlike the library's options structs it
// has no setters); a field's value before parsing is the flag's default, and
// `--help` is generated from the declarations:
//
//   struct Flags { int epochs = 10; double lr = 0.5; std::string kernel = "gaussian";
//                  bool verbose = false; };
//
//   int main(int argc, char** argv) {
//     Flags flags;
//     cli::Parser parser("kernel_regression", "Nadaraya-Watson kernel regression.");
//     parser.flag("epochs", flags.epochs, "training epochs", cli::positive())
//           .flag("lr", flags.lr, "learning rate", cli::positive())
//           .choice("kernel", flags.kernel, {"gaussian", "boxcar", "epanechnikov"}, "kernel")
//           .flag("verbose", flags.verbose, "print every epoch");
//     return cli::run_main(parser, argc, argv, [&] { return train(flags); });
//   }
//
// Accepted forms: `--name value`, `--name=value`, and `--name` alone for a
// switch (bool; `--name=false` turns a switch off). Programs with several
// modes declare commands, each with flags of its own; flags declared on the
// top-level parser are global and may appear before or after the command:
//
//   translate train --epochs 20 --seed 1
//   translate eval --checkpoint model.ckpt
//
// Every mistake on the command line throws cli::UsageError with a one-line
// message that names the flag, what was expected and what was given:
//
//   --epochs: expected an integer, got 'abc'
//   --epochs: expected a positive integer, got '0'
//   --kernel: 'cubic' is not one of gaussian|boxcar|epanechnikov
//   unknown flag --foo (see --help)
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "tensor/error.hpp"

namespace attograd::cli {

// A mistake on the command line (as opposed to a bug in the program).
class UsageError : public Error {
 public:
  using Error::Error;
};

// A condition on the value of a numeric flag. It reads as "a positive
// integer" or "a number in [0, 1]" in error messages and as "must be
// positive" or "must be in [1, 64]" in --help, so the limit a refusal names
// is the one --help shows.
struct Validator {
  std::function<bool(double value)> accepts;
  std::string adjective;  // goes before the noun: "positive"
  std::string condition;  // goes after the noun: "in [0, 1]", ">= 1"
  std::string range;      // --help's account when the two above read badly: "in [1, 64]"
};

Validator positive();                         // value > 0
Validator non_negative();                     // value >= 0
Validator at_least(double minimum);           // value >= minimum
Validator in_range(double low, double high);  // low <= value <= high
// A size that allocates memory or a count that sizes work or output:
// 1 <= value <= maximum, where the maximum bounds what one run can ask of a
// machine ("a positive integer at most 4096"; --help: "must be in [1, 4096]").
Validator size_at_most(double maximum);
// The same from 0: 0 <= value <= maximum, for counts where 0 means none or
// a default ("a non-negative integer at most 100000"; --help: "must be in
// [0, 100000]").
Validator count_at_most(double maximum);

// Declares flags and commands, parses a command line into the bound
// variables, and writes the --help text. The bound variables must outlive
// the parser. A Parser neither copies nor moves (commands point back at it).
class Parser {
 public:
  explicit Parser(std::string program, std::string description = "");
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;
  ~Parser();

  // Flag declarations. `name` is written without dashes ("epochs") and may
  // use lower-case letters, digits and '-'. The variable's current value is
  // the default shown in --help. A bool is a switch.
  Parser& flag(std::string name, std::string& target, std::string help);
  Parser& flag(std::string name, bool& target, std::string help);
  Parser& flag(std::string name, int& target, std::string help, Validator rule = {});
  Parser& flag(std::string name, std::int64_t& target, std::string help, Validator rule = {});
  Parser& flag(std::string name, std::size_t& target, std::string help, Validator rule = {});
  Parser& flag(std::string name, float& target, std::string help, Validator rule = {});
  Parser& flag(std::string name, double& target, std::string help, Validator rule = {});
  // A string that must be one of `choices`; its current value must be one.
  Parser& choice(std::string name, std::string& target, std::vector<std::string> choices,
                 std::string help);

  // Declares a command and returns its parser, on which the command's own
  // flags are declared. Once a parser has commands, the command line must
  // name one of them.
  Parser& add_command(std::string name, std::string help);
  // The command chosen by the last parse ("" when there are no commands).
  const std::string& command() const;
  // The names (without dashes) of the flags the last parse set from the
  // command line, as opposed to those left at their defaults: what a
  // `--resume` checks against the checkpoint's settings.
  const std::set<std::string>& given() const;

  // Parses argv[1..argc) into the bound variables. Returns false when
  // --help or -h was given: nothing more is parsed and help() holds the text
  // to print. Throws UsageError on any mistake. Call it on the top-level
  // parser only.
  [[nodiscard]] bool parse(int argc, const char* const* argv);
  // The same for the arguments after the program name.
  [[nodiscard]] bool parse(const std::vector<std::string>& arguments);

  // The help for what the last parse was asked about: a command's help after
  // `prog train --help`, otherwise this parser's.
  std::string help() const;

 private:
  using Target =
      std::variant<std::string*, bool*, int*, std::int64_t*, std::size_t*, float*, double*>;
  struct Flag {
    std::string name;
    std::string help;
    Target target;
    std::vector<std::string> choices;  // non-empty for choice flags
    Validator rule;
    std::string default_text;
  };
  struct Command {
    std::string help;
    std::unique_ptr<Parser> parser;
  };

  Parser& add(std::string name, std::string help, Target target, Validator rule,
              std::vector<std::string> choices = {});
  const Flag* find(const std::string& name) const;
  const Parser* find_command(const std::string& name) const;
  std::vector<std::string> command_names() const;
  static std::string expected_value(const Flag& flag);  // "a positive integer"
  void assign(const Flag& flag, const std::string& value) const;
  std::string unknown_flag_message(const std::string& name, const Parser& scope) const;
  std::string own_help() const;

  std::string program_;
  std::string description_;
  std::string name_;                // the command's name; "" for the top level
  const Parser* parent_ = nullptr;  // the top-level parser, for commands
  std::vector<Flag> flags_;
  std::vector<std::pair<std::string, Command>> commands_;
  std::string chosen_command_;
  std::set<std::string> given_;
  const Parser* help_scope_ = nullptr;
};

// The body of an example's main(). It parses the command line and then runs
// `body`, turning the outcome into an exit status:
//
//   --help / -h                        help on `out`, status 0
//   UsageError or attograd::Error      "error: <message>" on `err`, status 2
//     (bad flags, missing files, malformed data: the user can fix these)
//   std::bad_alloc                     "error: out of memory …" on `err`, status 2
//     (a size flag or an input file asks for more than the machine has)
//   any other std::exception           "error: <message>" on `err`, status 1
//   otherwise                          whatever `body` returns
//
// Messages are printed on one line (newlines become spaces), so scripts can
// grep them, with control characters escaped and at most kMaxMessageBytes
// long, however hostile the input they quote. Exceptions that are not
// std::exception propagate.
inline constexpr std::size_t kMaxMessageBytes = 4000;
int run_main(Parser& parser, int argc, const char* const* argv, const std::function<int()>& body,
             std::ostream& out, std::ostream& err);
// The same, printing to std::cout and std::cerr.
int run_main(Parser& parser, int argc, const char* const* argv, const std::function<int()>& body);

}  // namespace attograd::cli
