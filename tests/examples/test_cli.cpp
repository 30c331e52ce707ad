// tests/examples/test_cli.cpp — command-line parsing for the example
// programs: every flag type, both `--flag value` and `--flag=value`, the
// exact one-line error messages, the generated --help, and run_main's exit
// statuses.
#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/common/cli.hpp"
#include "tensor/error.hpp"

namespace test_cli {

namespace cli = attograd::cli;

namespace {

// Every kind of flag, bound to one struct.
struct Flags {
  std::string out = "plot.svg";
  int epochs = 10;
  std::int64_t seed = 42;
  std::size_t batch_size = 32;
  float dropout = 0.1f;
  double lr = 0.5;
  bool verbose = false;
  std::string kernel = "gaussian";
};

struct Fixture {
  Flags flags;
  cli::Parser parser{"kernel_regression", "Nadaraya-Watson kernel regression."};

  Fixture() {
    parser.flag("out", flags.out, "where to write the plot")
        .flag("epochs", flags.epochs, "training epochs", cli::positive())
        .flag("seed", flags.seed, "random seed")
        .flag("batch-size", flags.batch_size, "examples per step", cli::at_least(1))
        .flag("dropout", flags.dropout, "dropout probability", cli::in_range(0, 1))
        .flag("lr", flags.lr, "learning rate", cli::positive())
        .flag("verbose", flags.verbose, "print every epoch")
        .choice("kernel", flags.kernel, {"gaussian", "boxcar", "epanechnikov"}, "kernel shape");
  }

  // Parses and returns the UsageError message ("" when parsing succeeds).
  std::string error_of(const std::vector<std::string>& arguments) {
    try {
      (void)parser.parse(arguments);
    } catch (const cli::UsageError& error) {
      return error.what();
    }
    return "";
  }
};

// A program with commands, as `translate train|translate|eval`.
struct Translate {
  int epochs = 5;
  std::string checkpoint = "model.ckpt";
  std::string sentence;
  std::int64_t seed = 0;
  cli::Parser parser{"translate", "Train and run the seq2seq translator."};
  cli::Parser* train = nullptr;

  Translate() {
    parser.flag("seed", seed, "random seed");
    train = &parser.add_command("train", "train a model and save a checkpoint");
    train->flag("epochs", epochs, "training epochs", cli::positive());
    parser.add_command("translate", "translate a sentence")
        .flag("sentence", sentence, "the sentence to translate")
        .flag("checkpoint", checkpoint, "model to load");
    parser.add_command("eval", "compute BLEU on the test split");
  }

  std::string error_of(const std::vector<std::string>& arguments) {
    try {
      (void)parser.parse(arguments);
    } catch (const cli::UsageError& error) {
      return error.what();
    }
    return "";
  }
};

}  // namespace

TEST_CASE("defaults stay when no flag is given", "[cli]") {
  Fixture f;
  CHECK(f.parser.parse(std::vector<std::string>{}));
  CHECK(f.flags.epochs == 10);
  CHECK(f.flags.out == "plot.svg");
  CHECK(f.parser.command() == "");
}

TEST_CASE("every flag type parses in both spellings", "[cli]") {
  Fixture f;
  CHECK(f.parser.parse({"--out", "a b.svg", "--epochs=7", "--seed", "-3", "--batch-size=64",
                        "--dropout", "0.25", "--lr=1e-3", "--verbose", "--kernel", "boxcar"}));
  CHECK(f.flags.out == "a b.svg");
  CHECK(f.flags.epochs == 7);
  CHECK(f.flags.seed == -3);
  CHECK(f.flags.batch_size == 64);
  CHECK(f.flags.dropout == 0.25f);
  CHECK(f.flags.lr == 1e-3);
  CHECK(f.flags.verbose);
  CHECK(f.flags.kernel == "boxcar");

  CHECK(f.parser.parse({"--verbose=false", "--kernel=epanechnikov", "--epochs", "+9"}));
  CHECK(!f.flags.verbose);
  CHECK(f.flags.kernel == "epanechnikov");
  CHECK(f.flags.epochs == 9);
  // The last occurrence wins; a value may contain '='.
  CHECK(f.parser.parse({"--epochs=1", "--epochs=2", "--out=a=b"}));
  CHECK(f.flags.epochs == 2);
  CHECK(f.flags.out == "a=b");
}

TEST_CASE("parse takes argc and argv", "[cli]") {
  Fixture f;
  const char* argv[] = {"kernel_regression", "--epochs", "3", "--verbose", nullptr};
  CHECK(f.parser.parse(4, argv));
  CHECK(f.flags.epochs == 3);
  CHECK(f.flags.verbose);
}

TEST_CASE("bad values give one-line messages naming the flag", "[cli]") {
  Fixture f;
  CHECK(f.error_of({"--epochs", "abc"}) == "--epochs: expected a positive integer, got 'abc'");
  CHECK(f.error_of({"--seed", "1.5"}) == "--seed: expected an integer, got '1.5'");
  CHECK(f.error_of({"--seed", ""}) == "--seed: expected an integer, got ''");
  CHECK(f.error_of({"--out="}) ==
        "--out: expected a value, got an empty string (leave the flag out for its default)");
  CHECK(f.error_of({"--out", ""}) ==
        "--out: expected a value, got an empty string (leave the flag out for its default)");
  CHECK(f.error_of({"--epochs", "0"}) == "--epochs: expected a positive integer, got '0'");
  CHECK(f.error_of({"--epochs", "99999999999"}) ==
        "--epochs: expected an integer between -2147483648 and 2147483647, got '99999999999'");
  CHECK(f.error_of({"--batch-size", "-3"}) == "--batch-size: expected an integer >= 1, got '-3'");
  CHECK(f.error_of({"--batch-size", "0"}) == "--batch-size: expected an integer >= 1, got '0'");
  CHECK(f.error_of({"--lr", "fast"}) == "--lr: expected a positive number, got 'fast'");
  CHECK(f.error_of({"--lr", "-0.1"}) == "--lr: expected a positive number, got '-0.1'");
  CHECK(f.error_of({"--lr", "nan"}) == "--lr: expected a finite number, got 'nan'");
  CHECK(f.error_of({"--lr", "1e999"}) ==
        "--lr: '1e999' is out of range (expected a positive number)");
  CHECK(f.error_of({"--dropout", "1.5"}) == "--dropout: expected a number in [0, 1], got '1.5'");
  CHECK(f.error_of({"--verbose=maybe"}) == "--verbose: expected true or false, got 'maybe'");
  CHECK(f.error_of({"--kernel", "cubic"}) ==
        "--kernel: 'cubic' is not one of gaussian|boxcar|epanechnikov");
}

TEST_CASE("a size flag without a rule still refuses negative numbers", "[cli]") {
  std::size_t hidden = 16;
  cli::Parser parser("p");
  parser.flag("hidden", hidden, "hidden units");
  CHECK_THROWS_WITH(parser.parse({"--hidden", "-3"}),
                    "--hidden: expected a non-negative integer, got '-3'");
  CHECK(parser.parse({"--hidden", "0"}));
  CHECK(hidden == 0);
}

TEST_CASE("missing values, unknown flags and stray arguments", "[cli]") {
  Fixture f;
  CHECK(f.error_of({"--foo"}) == "unknown flag --foo (see --help)");
  CHECK(f.error_of({"--foo=1"}) == "unknown flag --foo (see --help)");
  CHECK(f.error_of({"--epoch", "3"}) ==
        "unknown flag --epoch; did you mean --epochs? (see --help)");
  CHECK(f.error_of({"-e"}) == "unknown flag -e (flags start with --; see --help)");
  CHECK(f.error_of({"--epochs"}) == "--epochs: missing value (expected a positive integer)");
  CHECK(f.error_of({"--epochs", "--verbose"}) ==
        "--epochs: missing value (expected a positive integer)");
  CHECK(f.error_of({"--kernel"}) ==
        "--kernel: missing value (expected one of gaussian|boxcar|epanechnikov)");
  CHECK(f.error_of({"extra"}) == "unexpected argument 'extra' (see --help)");
}

TEST_CASE("a usage error is an attograd::Error", "[cli]") {
  Fixture f;
  CHECK_THROWS_AS(f.parser.parse({"--epochs", "x"}), cli::UsageError);
  CHECK_THROWS_AS(f.parser.parse({"--epochs", "x"}), attograd::Error);
}

TEST_CASE("--help is generated from the declarations", "[cli]") {
  Fixture f;
  CHECK(!f.parser.parse({"--epochs", "3", "--help", "--not-parsed"}));
  CHECK(!f.parser.parse({"-h"}));
  const std::string help = f.parser.help();
  INFO(help);
  CHECK(help.starts_with("Usage: kernel_regression [flags]\n"));
  CHECK(help.find("Nadaraya-Watson kernel regression.") != std::string::npos);
  for (const char* flag : {"--out <text>", "--epochs <int>", "--seed <int>", "--batch-size <int>",
                           "--dropout <number>", "--lr <number>", "--verbose", "-h, --help",
                           "--kernel <gaussian|boxcar|epanechnikov>"}) {
    CHECK(help.find(flag) != std::string::npos);
  }
  for (const char* note :
       {"where to write the plot (default: plot.svg)",
        "training epochs (must be positive; default: 10)", "random seed (default: 42)",
        "(must be >= 1; default: 32)", "dropout probability (must be in [0, 1]; default: 0.1)",
        "learning rate (must be positive; default: 0.5)", "kernel shape (default: gaussian)"}) {
    CHECK(help.find(note) != std::string::npos);
  }
  CHECK(help.find("print every epoch\n") != std::string::npos);  // a switch shows no default
}

TEST_CASE("commands choose their own flags, global flags go anywhere", "[cli]") {
  Translate t;
  CHECK(t.parser.parse({"train", "--epochs", "20"}));
  CHECK(t.parser.command() == "train");
  CHECK(t.epochs == 20);
  CHECK(t.parser.parse({"--seed", "1", "translate", "--sentence", "il fait beau", "--seed=2"}));
  CHECK(t.parser.command() == "translate");
  CHECK(t.sentence == "il fait beau");
  CHECK(t.seed == 2);
  CHECK(t.parser.parse({"eval"}));
  CHECK(t.parser.command() == "eval");

  CHECK(t.error_of({}) == "missing command: expected one of train|translate|eval (see --help)");
  CHECK(t.error_of({"trian"}) ==
        "unknown command 'trian': expected one of train|translate|eval (see --help)");
  CHECK(t.error_of({"--epochs", "3", "train"}) ==
        "--epochs is a flag of the command 'train'; put it after 'train' (see --help)");
  CHECK(t.error_of({"eval", "--epochs", "3"}) ==
        "--epochs is a flag of the command 'train', not of 'eval' (see --help)");
  CHECK(t.error_of({"train", "eval"}) == "unexpected argument 'eval' (see --help)");
  CHECK(t.error_of({"train", "--epochs", "-1"}) ==
        "--epochs: expected a positive integer, got '-1'");
}

TEST_CASE("help for a program with commands and for one command", "[cli]") {
  Translate t;
  CHECK(!t.parser.parse({"--help"}));
  const std::string top = t.parser.help();
  INFO(top);
  CHECK(top.starts_with("Usage: translate <command> [flags]\n"));
  for (const char* line : {"train", "translate a sentence", "compute BLEU on the test split",
                           "--seed <int>", "Run 'translate <command> --help'"}) {
    CHECK(top.find(line) != std::string::npos);
  }
  CHECK(top.find("--epochs") == std::string::npos);

  CHECK(!t.parser.parse({"train", "--help"}));
  const std::string train = t.parser.help();
  INFO(train);
  CHECK(train.starts_with("Usage: translate train [flags]\n"));
  CHECK(train.find("train a model and save a checkpoint") != std::string::npos);
  CHECK(train.find("--epochs <int>") != std::string::npos);
  CHECK(train.find("Global flags:") != std::string::npos);
  CHECK(train.find("--seed <int>") != std::string::npos);
  CHECK(train.find("--sentence") == std::string::npos);
}

TEST_CASE("mistakes in the declarations are programming errors", "[cli]") {
  Flags o;
  cli::Parser parser("p");
  parser.flag("epochs", o.epochs, "");
  CHECK_THROWS_WITH(parser.flag("epochs", o.epochs, ""),
                    "cli: --epochs is declared twice (commands cannot reuse a global flag's name)");
  CHECK_THROWS_AS(parser.flag("Bad_Name", o.epochs, ""), attograd::Error);
  CHECK_THROWS_AS(parser.flag("--lr", o.lr, ""), attograd::Error);
  CHECK_THROWS_AS(parser.flag("help", o.verbose, ""), attograd::Error);
  CHECK_THROWS_WITH(parser.choice("kernel", o.kernel, {"boxcar"}, ""),
                    "cli: the default 'gaussian' of --kernel is not one of boxcar");
  cli::Parser& command = parser.add_command("train", "");
  CHECK_THROWS_AS(command.flag("epochs", o.epochs, ""), attograd::Error);
  CHECK_THROWS_AS(command.add_command("nested", ""), attograd::Error);
  CHECK_THROWS_AS(parser.add_command("train", ""), attograd::Error);
  CHECK_THROWS_AS(command.parse(std::vector<std::string>{}), attograd::Error);
  CHECK_THROWS_AS(cli::in_range(1, 0), attograd::Error);
}

TEST_CASE("run_main turns outcomes into exit statuses", "[cli]") {
  std::ostringstream out, err;
  const auto run = [&](std::vector<const char*> argv, const std::function<int()>& body) {
    Fixture f;
    out.str("");
    err.str("");
    argv.insert(argv.begin(), "kernel_regression");
    return cli::run_main(f.parser, static_cast<int>(argv.size()), argv.data(), body, out, err);
  };

  CHECK(run({"--epochs", "3"}, [] { return 0; }) == 0);
  CHECK(run({}, [] { return 7; }) == 7);
  CHECK(err.str() == "");

  CHECK(run({"--help"}, [] { return 1; }) == 0);
  CHECK(out.str().starts_with("Usage: kernel_regression"));
  CHECK(err.str() == "");

  CHECK(run({"--epochs", "abc"}, [] { return 0; }) == 2);
  CHECK(err.str() == "error: --epochs: expected a positive integer, got 'abc'\n");
  CHECK(out.str() == "");

  CHECK(run({}, []() -> int { attograd::fail("cannot open 'data/fra.txt': no such file"); }) == 2);
  CHECK(err.str() == "error: cannot open 'data/fra.txt': no such file\n");

  CHECK(run({}, []() -> int { throw std::runtime_error("two\nlines"); }) == 1);
  CHECK(err.str() == "error: two lines\n");
}

}  // namespace test_cli
