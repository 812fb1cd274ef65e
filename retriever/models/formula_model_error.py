"""The error of a missing formula model, in a module of its own: those that catch it need not load torch."""

from __future__ import annotations


class FormulaModelError(RuntimeError):
    """No formula model where the settings point."""
