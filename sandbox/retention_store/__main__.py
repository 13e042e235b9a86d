"""`python -m sandbox.retention_store --access-key-file A --secret-key-file S -- versitygw ...`:
runs the gateway with its root credentials read from the two files.

versitygw takes its root credentials from its argv (`--access`, `--secret`) or its environment
(ROOT_ACCESS_KEY, ROOT_SECRET_KEY), and from no file. On the command line the secret would show
in `ps` to every user; in the supervisor's Service it would be written into the sandbox's
definition before the files exist. So this reads the files and execs the gateway with them in
its environment only: the same process (pid and start time, which the supervisor records), now
versitygw.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m sandbox.retention_store", description=__doc__)
    parser.add_argument("--access-key-file", type=Path, required=True)
    parser.add_argument("--secret-key-file", type=Path, required=True)
    parser.add_argument("command", nargs="+", help="the gateway's argv, after --")
    args = parser.parse_args(argv)
    env = {
        **os.environ,
        "ROOT_ACCESS_KEY": args.access_key_file.read_text().strip(),
        "ROOT_SECRET_KEY": args.secret_key_file.read_text().strip(),
    }
    os.execve(args.command[0], args.command, env)


if __name__ == "__main__":
    main(sys.argv[1:])
