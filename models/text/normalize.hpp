// models/text/normalize.hpp — turning raw UTF-8 sentences into the word
// sequences the translation models see.
//
// Two normalisers live here:
//
//   normalize_sentence  the PyTorch seq2seq tutorial's rules (the main one):
//                       "J’ai gagné."  ->  "j ai gagne ."
//   preprocess_d2l      d2l.ai's lighter preprocessing for its batched recipe:
//                       "J’ai gagné."  ->  "j’ai gagné ."
//
// Both return std::nullopt when the input is not valid UTF-8, so a reader can
// skip the line and count it instead of producing garbage. Neither depends on
// tensors: sentences are plain std::string, words are space-separated.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::text {

// The byte offset (0-based) of the first byte that does not start a valid
// UTF-8 sequence — a stray continuation byte, a truncated sequence, an
// overlong form, a surrogate or a value above U+10FFFF — or std::nullopt when
// the whole text is valid.
std::optional<std::size_t> first_invalid_utf8(std::string_view text);

// The seq2seq tutorial's normalisation, rule by rule:
//   1. Unicode -> ASCII: decompose every character canonically (NFD, so
//      "é" becomes "e" + U+0301 COMBINING ACUTE) and drop the non-spacing
//      marks (category Mn). Characters with no ASCII base ("œ", "’", "€")
//      survive this step and are removed by rule 4.
//   2. Lower-case A-Z.
//   3. Put a space before each '.', '!' and '?', so punctuation becomes its
//      own word. (Only before: "a.b" gives "a .b", exactly as the tutorial's
//      regular expression does.)
//   4. Replace every other run of characters that are not a-z and not . ! ?
//      (digits, apostrophes, hyphens, spaces, leftover non-ASCII) by one space.
//   5. Collapse repeated spaces and trim both ends.
// Examples: "Je suis fatigué !" -> "je suis fatigue !", "J’ai gagné." ->
// "j ai gagne .", "Ça alors !" -> "ca alors !", "I'm OK." -> "i m ok .".
// Returns std::nullopt when `sentence` is not valid UTF-8. The result may be
// empty (a sentence made only of digits, say).
std::optional<std::string> normalize_sentence(std::string_view sentence);

// d2l.ai's `preprocess_nmt`: replace the no-break spaces U+202F and U+00A0
// by ordinary spaces, lower-case every character (Unicode simple case
// mapping, accents are kept), and put a space before each ',', '.', '!', '?'
// that does not already follow a space. Apostrophes stay inside words
// ("j’ai"). Returns std::nullopt when `sentence` is not valid UTF-8.
std::optional<std::string> preprocess_d2l(std::string_view sentence);

// Splits a sentence on spaces into words. Empty words (from leading,
// trailing or repeated spaces) are dropped, so "a  b " gives {"a", "b"}.
std::vector<std::string> split_words(std::string_view sentence);

// The inverse of split_words: the words joined by single spaces.
std::string join_words(const std::vector<std::string>& words);

// The number of words split_words would return, without building them.
std::size_t count_words(std::string_view sentence);

}  // namespace attograd::text
