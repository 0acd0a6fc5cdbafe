// The interpreter a launch runs Python with when nothing names one. torchrun and accelerate
// run workers with the Python they were installed in; xlaunch, a program, finds that one
// beside itself: pip puts both in an environment's bin folder.
#pragma once

#include <functional>
#include <string>

namespace xlaunch::launcher {

/// `folder`/python3 when `folder` (where the running xlaunch was found, as invoked: links not
/// followed) is the bin folder of a virtual environment (../pyvenv.cfg) or a conda one
/// (../conda-meta) and `is_program` says that python3 is one; else "python3", found on PATH.
/// Pure: `is_program` and `exists` answer for the file system.
std::string python_beside(const std::string& folder,
                          const std::function<bool(const std::string&)>& exists,
                          const std::function<bool(const std::string&)>& is_program);

/// The folder the running xlaunch was found in: argv[0]'s folder when it names one (made
/// absolute), else the first PATH folder holding an executable of that name; "" if none.
/// Links are not followed: a pipx link on PATH is not the environment it points into.
std::string invoked_folder(const std::string& argv0, const std::string& path,
                           const std::string& working_folder,
                           const std::function<bool(const std::string&)>& is_program);

/// Remembers argv[0] (main calls it first), for default_python.
void remember_invocation(const char* argv0);

/// python_beside(invoked_folder(...)) for this process.
std::string default_python();

}  // namespace xlaunch::launcher
