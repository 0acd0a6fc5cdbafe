"""python -m xlaunch ARGS: runs the xlaunch program with ARGS. The interpreter is replaced by
the program (exec), so signals, the exit status and the process id are the program's own."""
import os
import sys

from xlaunch import binary


def main():
    program = str(binary())
    os.execv(program, [program, *sys.argv[1:]])


if __name__ == "__main__":
    main()
