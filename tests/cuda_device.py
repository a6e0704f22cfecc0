"""The device of the ``cuda`` tests: a CUDA GPU, or ``ALIGNERS_TEST_DEVICE`` (e.g. ``cpu``: the
same comparisons CPU-vs-CPU, a self-check). ``CUDA_MARKS`` marks a module ``cuda`` and skips
it with a reason when no GPU exists and no device is forced."""

import os

import pytest
import torch

__all__ = ["DEVICE", "CUDA_MARKS"]

_FORCED = os.environ.get("ALIGNERS_TEST_DEVICE")
DEVICE = torch.device(_FORCED or "cuda")
CUDA_MARKS = [
    pytest.mark.cuda,
    pytest.mark.skipif(_FORCED is None and not torch.cuda.is_available(),
                       reason="no CUDA GPU: the cuda tests compare GPU with CPU results"),
]
