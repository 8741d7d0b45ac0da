"""Reusable hook functions and context managers (ablate, patch, add a vector, low-rank a weight).

Every edit made through this package is undone on exit, bit-exact, even when the body raises.
"""
