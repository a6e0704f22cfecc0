"""The device of the ``cuda`` tests: a CUDA GPU when torch sees one, else the CPU (the same
comparisons CPU-vs-CPU: a self-check that runs in CI, so a change of defaults breaks CI and
not a lent GPU), or ``ALIGNERS_TEST_DEVICE`` (e.g. ``cpu``) whatever is there.
``CUDA_MARKS`` marks a module ``cuda`` (``pytest -m cuda`` selects them)."""

import os

import pytest
import torch

__all__ = ["DEVICE", "CUDA_MARKS"]

DEVICE = torch.device(os.environ.get("ALIGNERS_TEST_DEVICE")
                      or ("cuda" if torch.cuda.is_available() else "cpu"))
CUDA_MARKS = [pytest.mark.cuda]
