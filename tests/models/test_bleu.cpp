// tests/models/test_bleu.cpp — corpus BLEU-4 (Papineni et al. 2002) and
// d2l's sentence BLEU on cases worked by hand; each expected value is written
// as the formula it comes from.
#include <catch2/catch.hpp>
#include <cmath>

#include "models/text/bleu.hpp"
#include "models/text/normalize.hpp"
#include "tensor/error.hpp"

namespace test_bleu {

using namespace attograd::text;

namespace {

Words words(std::string_view sentence) { return split_words(sentence); }

// One hypothesis with its references.
BleuDetails bleu_one(std::string_view hypothesis, std::vector<std::string_view> references) {
  std::vector<Words> reference_words;
  for (const std::string_view reference : references) reference_words.push_back(words(reference));
  return corpus_bleu_details({reference_words}, {words(hypothesis)});
}

}  // namespace

TEST_CASE("corpus BLEU of a perfect translation is 1", "[bleu]") {
  const BleuDetails details = bleu_one("the cat sat on the mat", {"the cat sat on the mat"});
  CHECK(details.score == 1.0);
  CHECK(details.brevity_penalty == 1.0);
  CHECK(details.matches == std::array<std::int64_t, 4>{6, 5, 4, 3});
  CHECK(details.totals == std::array<std::int64_t, 4>{6, 5, 4, 3});
}

TEST_CASE("corpus BLEU is 0 without a 4-gram in common", "[bleu]") {
  const BleuDetails details = bleu_one("the cat sat on a mat", {"the cat is on the mat"});
  // Unigrams the cat on mat; bigrams "the cat"; no trigram or 4-gram matches.
  CHECK(details.matches == std::array<std::int64_t, 4>{4, 1, 0, 0});
  CHECK(details.totals == std::array<std::int64_t, 4>{6, 5, 4, 3});
  CHECK(details.precisions[0] == Approx(4.0 / 6.0));
  CHECK(details.score == 0.0);
}

TEST_CASE("corpus BLEU applies the brevity penalty to a short hypothesis", "[bleu]") {
  // Every n-gram of "the cat sat on" is in the reference: all p_n = 1.
  // c = 4, r = 6: BP = exp(1 - 6/4) = exp(-0.5) = 0.60653...
  const BleuDetails details = bleu_one("the cat sat on", {"the cat sat on the mat"});
  CHECK(details.precisions == std::array<double, 4>{1.0, 1.0, 1.0, 1.0});
  CHECK(details.hypothesis_length == 4);
  CHECK(details.reference_length == 6);
  CHECK(details.brevity_penalty == Approx(std::exp(-0.5)).epsilon(1e-12));
  CHECK(details.score == Approx(0.6065306597126334).epsilon(1e-12));
}

TEST_CASE("corpus BLEU clips by the most generous single reference", "[bleu]") {
  // Papineni's example: "the" occurs at most twice in any one reference, so
  // only 2 of the 7 "the" count.
  const BleuDetails the = bleu_one("the the the the the the the",
                                   {"the cat is on the mat", "there is a cat on the mat"});
  CHECK(the.matches[0] == 2);
  CHECK(the.totals[0] == 7);
  CHECK(the.precisions[0] == Approx(2.0 / 7.0));
  CHECK(the.score == 0.0);

  // "a" is clipped by the second reference (2), "b" by the first (1): the
  // maximum is taken per n-gram, not per reference, and counts are not summed.
  const BleuDetails mixed = bleu_one("a a b", {"a b c", "a a d"});
  CHECK(mixed.matches[0] == 3);
  CHECK(mixed.matches[1] == 2);  // "a a" from the second, "a b" from the first
}

TEST_CASE("corpus BLEU takes the closest reference length, ties to the shorter", "[bleu]") {
  // c = 4; references of 3 and 5 words are both 1 away: r = 3 < c, BP = 1.
  // (Taking 5 would give BP = exp(1 - 5/4).) All n-grams match the second.
  const BleuDetails details = bleu_one("a b c d", {"a b c", "a b c d e"});
  CHECK(details.reference_length == 3);
  CHECK(details.brevity_penalty == 1.0);
  CHECK(details.score == 1.0);
}

TEST_CASE("corpus BLEU sums counts over sentences before dividing", "[bleu]") {
  // Sentence 1 matches fully: (4,3,2,1) of (4,3,2,1).
  // Sentence 2, "a b x d e" vs "a b c d e f": unigrams 4/5; bigrams "a b",
  // "d e" 2/4; trigrams 0/3; 4-grams 0/2. On its own it would score 0.
  // Corpus: p = 8/9, 5/7, 2/5, 1/3; c = 9, r = 4 + 6 = 10.
  const std::vector<std::vector<Words>> references = {{words("a b c d")}, {words("a b c d e f")}};
  const std::vector<Words> hypotheses = {words("a b c d"), words("a b x d e")};
  const BleuDetails details = corpus_bleu_details(references, hypotheses);
  CHECK(details.matches == std::array<std::int64_t, 4>{8, 5, 2, 1});
  CHECK(details.totals == std::array<std::int64_t, 4>{9, 7, 5, 3});
  const double expected =
      std::exp(1.0 - 10.0 / 9.0) * std::pow(8.0 / 9.0 * 5.0 / 7.0 * 2.0 / 5.0 * 1.0 / 3.0, 0.25);
  CHECK(details.score == Approx(expected).epsilon(1e-12));
  CHECK(corpus_bleu(references, hypotheses) == details.score);
}

TEST_CASE("corpus BLEU edge cases", "[bleu]") {
  CHECK(corpus_bleu({}, {}) == 0.0);
  CHECK(corpus_bleu({{words("a b c d")}}, {Words{}}) == 0.0);
  CHECK(bleu_one("a b c", {"a b c"}).score == 0.0);  // no 4-grams at all
  CHECK_THROWS_AS(corpus_bleu({{words("a")}}, {}), attograd::Error);
  CHECK_THROWS_WITH(corpus_bleu({{}}, {words("a")}), Catch::Contains("no reference"));
}

TEST_CASE("d2l sentence BLEU reproduces the book's examples", "[bleu]") {
  CHECK(d2l_sentence_bleu("va !", "va !", 2) == 1.0);
  CHECK(d2l_sentence_bleu("j'ai perdu .", "j'ai perdu .", 2) == 1.0);
  CHECK(d2l_sentence_bleu("je suis chez moi .", "je suis chez moi .", 2) == 1.0);
  // "il est riche ." vs "il est calme .": p1 = 3/4, p2 = 1/3, same length.
  const double riche = std::pow(3.0 / 4.0, 0.5) * std::pow(1.0 / 3.0, 0.25);
  CHECK(d2l_sentence_bleu("il est riche .", "il est calme .", 2) == Approx(riche).epsilon(1e-12));
  CHECK(riche == Approx(0.658).margin(5e-4));  // the value d2l prints
}

TEST_CASE("d2l sentence BLEU penalties, clipping and short predictions", "[bleu]") {
  // Too short: exp(1 - 4/2) with p1 = p2 = 1.
  CHECK(d2l_sentence_bleu("je suis", "je suis chez moi", 2) == Approx(std::exp(-1.0)));
  // Longer than the label: no penalty; p1 = 2/3 (the second "va" is clipped),
  // p2 = 1/2.
  CHECK(d2l_sentence_bleu("va ! va", "va !", 2) ==
        Approx(std::pow(2.0 / 3.0, 0.5) * std::pow(0.5, 0.25)));
  // Clipping: one "the" in the label.
  CHECK(d2l_sentence_bleu("the the the", "the cat", 1) == Approx(std::sqrt(1.0 / 3.0)));
  CHECK(d2l_sentence_bleu("a b", "c d", 2) == 0.0);
  CHECK(d2l_sentence_bleu("va", "va !", 2) == 0.0);  // fewer words than k
  CHECK(d2l_sentence_bleu("", "va !", 1) == 0.0);
  CHECK(d2l_sentence_bleu(words("va !"), words("va !"), 1) == 1.0);
  CHECK_THROWS_AS(d2l_sentence_bleu("va !", "va !", 0), attograd::Error);
}

}  // namespace test_bleu
