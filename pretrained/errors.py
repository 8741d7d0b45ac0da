"""Exceptions raised by :mod:`pretrained`."""

from __future__ import annotations


class PretrainedNotAvailableError(OSError):
    """A hub model can't be obtained: not in the local Hugging Face cache while offline, or the
    hub could not be reached. The message says how to load a local directory instead."""
