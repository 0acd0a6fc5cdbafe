// SLURM's hostlist syntax ("gpu[01-04,07]", "a[1-2]-b[3,5]", "n1,n[3-4]"), expanded. Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace xlaunch::cluster {

/// Expands a hostlist into host names, in order. Commas separate hosts only outside
/// brackets; each bracket holds numbers and ranges ("01-04" keeps the zero padding of the
/// lower bound); several brackets in one name multiply out left to right. Throws
/// std::invalid_argument naming the problem (unbalanced bracket, bad range, too many hosts).
std::vector<std::string> expand_hostlist(std::string_view hostlist);

}  // namespace xlaunch::cluster
