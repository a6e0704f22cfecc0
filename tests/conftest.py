"""Shared test helpers: the shipped data folders (`../shared/data`, or $ALIGNERS_DATA).

Tests that read shipped data or oracles use `shared_path(...)`, which skips the test only
when the folder truly is absent (e.g. a clone without the shared data next to it).
"""

from pathlib import Path

import pytest

from aligners.data.paths import data_root

SHARED = data_root().parent  # .../shared (data/, oracles/)


def shared_path(*parts: str) -> Path:
    """`<shared>/<parts...>`, skipping the calling test when it does not exist."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path}")
    return path
