"""Exceptions shared by every runnable module."""

from __future__ import annotations


class UsageError(Exception):
    """A user error (a bad option, an output folder that can't be used, missing weights): the CLI prints
    its message as one line and exits 2, without a traceback. Raise it before any work starts."""
