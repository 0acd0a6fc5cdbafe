// Boost.JSON, header-only: its implementation is compiled once, in this file, so that no
// Boost library has to be linked (the rest of xlaunch uses Boost's headers only).
#include <boost/json/src.hpp>
