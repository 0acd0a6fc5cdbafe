// Boost.JSON's compiled part, built into this module (Debian ships it header-only here).
// Only one translation unit in the program may include it.
#include <boost/json/src.hpp>
