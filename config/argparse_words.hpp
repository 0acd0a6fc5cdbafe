// How argparse reads a launcher's flags where CLI11 reads the same words otherwise: torchrun
// and accelerate parse their command lines with argparse, and their users' command lines
// must mean here what they mean there. Pure.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xlaunch::config {

/// Whether the flag spelt `name` ("--role", "-r") takes a value; nullopt for no known flag.
using TakesValue = std::function<std::optional<bool>(std::string_view name)>;

/// The words after a subcommand, spelt so that CLI11 reads them as argparse would: up to
/// the program (the first word that is neither a flag nor a flag's value) or "--", each
/// "--flag=" with nothing after the '=' becomes "--flag" and "" (argparse: the value is
/// empty, as in --rdzv_id=$UNSET; CLI11 would take the next word, the program, instead).
/// The program and every word after it stay as they are: they are the worker's.
std::vector<std::string> argparse_spelling(const std::vector<std::string>& words,
                                           const TakesValue& takes_value);

/// How many of `words` are the launcher's: its flags and their values, before the program
/// (or "--").
std::size_t launcher_word_count(const std::vector<std::string>& words,
                                const TakesValue& takes_value);

}  // namespace xlaunch::config
