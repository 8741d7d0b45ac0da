"""Exceptions shared by every runnable module."""

from __future__ import annotations


class UsageError(Exception):
    """A user error (a bad option, an output folder that can't be used, missing weights): the CLI prints
    its message as one line and exits 2, without a traceback. Raise it before any work starts."""


class CheckpointError(UsageError):
    """A checkpoint file that can't be read (truncated, corrupted, missing); the message names the file and
    what to do about it."""
