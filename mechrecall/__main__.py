"""Command line: ``python -m mechrecall <command> [options]`` (``--help`` on each command).

Commands:
  demo    train a toy model end to end (induction task), write results.json, a figure and a checkpoint
"""
from __future__ import annotations

import sys

COMMANDS = {"demo": "analyses.papers.induction_heads.demo"}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"unknown command {command!r}; expected one of {sorted(COMMANDS)}\n\n{__doc__}", file=sys.stderr)
        return 2
    import importlib

    return importlib.import_module(COMMANDS[command]).main(rest)


if __name__ == "__main__":
    sys.exit(main())
