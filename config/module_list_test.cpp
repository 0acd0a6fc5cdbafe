#include "config/module_list.hpp"

#include <catch2/catch.hpp>

using xlaunch::config::module_names;
using xlaunch::config::normalize_module_list;

TEST_CASE("a module list is normalised: blanks around names go") {
  CHECK(normalize_module_list("torch") == "torch");
  CHECK(normalize_module_list(" torch , numpy,torch.distributed ") ==
        "torch,numpy,torch.distributed");
  CHECK(normalize_module_list("_private,a1") == "_private,a1");
}

TEST_CASE("an empty module list is off") {
  CHECK(normalize_module_list("") == "");
  CHECK(normalize_module_list("  ") == "");
  CHECK(module_names("").empty());
}

TEST_CASE("what is not a module name is refused") {
  CHECK_FALSE(normalize_module_list("torch,"));
  CHECK_FALSE(normalize_module_list("torch,,numpy"));
  CHECK_FALSE(normalize_module_list("1torch"));
  CHECK_FALSE(normalize_module_list("torch..nn"));
  CHECK_FALSE(normalize_module_list("torch.nn."));
  CHECK_FALSE(normalize_module_list("my-module"));
  CHECK_FALSE(normalize_module_list("os; import x"));
}

TEST_CASE("a normalised list splits into its names") {
  CHECK(module_names("torch,numpy") == std::vector<std::string>{"torch", "numpy"});
}
