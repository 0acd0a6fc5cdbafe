// Boost.JSON's compiled part (Debian ships it header-only here), built once for the whole
// program: report/ (summary.json) and cluster/ (etcd's JSON gateway) both use Boost.JSON, and
// both link this module. Only one translation unit in the program may include src.hpp.
#include <boost/json/src.hpp>
