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

/// A flag the launcher knows, as a spelling on the command line names it.
struct KnownFlag {
  std::string name;  ///< its full spelling: "--nproc_per_node" for "--nproc"
  bool takes_value = false;
};
/// The flag spelt `spelling` ("--role", "-r"), or, for a long spelling that names no flag,
/// the one flag whose long names it begins (argparse's abbreviations: "--nproc"); nullopt
/// when there is none, or several.
using FindFlag = std::function<std::optional<KnownFlag>(std::string_view spelling)>;

/// The words after a subcommand, spelt so that CLI11 reads them as argparse would, up to
/// the program (the first word that is neither a flag nor a flag's value) or "--":
/// - "--flag=" with nothing after the '=' becomes "--flag" and "" (argparse: the value is
///   empty, as in --rdzv_id=$UNSET; CLI11 would take the next word, the program, instead);
/// - an abbreviation becomes the flag's full spelling ("--nproc 2", "--max_res=1").
/// The program and every word after it stay as they are: they are the worker's.
std::vector<std::string> argparse_spelling(const std::vector<std::string>& words,
                                           const FindFlag& find);

/// How many of `words` are the launcher's: its flags and their values, before the program
/// (or "--").
std::size_t launcher_word_count(const std::vector<std::string>& words, const FindFlag& find);

}  // namespace xlaunch::config
