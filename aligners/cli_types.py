"""argparse value types shared by the commands: one message for a bad number (no torch)."""

from __future__ import annotations

import argparse
import math

__all__ = ["MAX_ITERATIONS", "int_at_least", "float_in"]

# the bound of every iteration / epoch count (EM, SGD, EG): a typo must not run for ever
MAX_ITERATIONS = 1000


def int_at_least(low: int, high: int | None = None):
    """argparse type: an integer >= `low` (and <= `high` when given)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            what = f">= {low}" if high is None else f"in [{low}, {high}]"
            raise argparse.ArgumentTypeError(f"must be {what}, got {value}")
        return value
    return parse


def float_in(low: float, high: float, *, high_open: bool = False):
    """argparse type: a finite number in [low, high] (or [low, high) with `high_open`)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        above = value >= high if high_open else value > high
        if not math.isfinite(value) or value < low or above:
            bracket = ")" if high_open else "]"
            raise argparse.ArgumentTypeError(f"must be in [{low}, {high}{bracket}, got {text}")
        return value
    return parse
