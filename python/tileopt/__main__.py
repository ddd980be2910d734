"""python -m tileopt: the tileopt command line (tileopt --help).

The package carries the CLI program beside this file; it replaces this process,
so exit codes, signals and progress on a terminal are the program's own.
"""

import os
import sys


def main():
    cli = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tileopt")
    if not os.access(cli, os.X_OK):
        sys.exit("tileopt: the command-line program is missing from the package (%s); "
                 "reinstall it with pip install ." % cli)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(cli, ["tileopt"] + sys.argv[1:])


if __name__ == "__main__":
    main()
