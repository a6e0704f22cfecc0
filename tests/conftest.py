"""Shared test helpers: the shipped data folders (`../shared/data`, or $ALIGNERS_DATA).

Tests that read shipped data or oracles use `shared_path(...)`, which skips the test only
when the folder truly is absent (e.g. a clone without the shared data next to it).
"""

import argparse
from pathlib import Path

import pytest

import aligners.run  # noqa: F401  (registers the config schemas before any test composes)
from aligners.data.paths import data_root

SHARED = data_root().parent  # .../shared (data/, oracles/)


@pytest.fixture(autouse=True, scope="session")
def _cache_in_pytest_temp(tmp_path_factory):
    """Parse caches go under pytest's temporary folder, not ~/.cache/aligners (unless
    $ALIGNERS_CACHE names a place); subprocesses inherit it."""
    import os

    os.environ.setdefault("ALIGNERS_CACHE", str(tmp_path_factory.mktemp("aligners-cache")))


def shared_path(*parts: str) -> Path:
    """`<shared>/<parts...>`, skipping the calling test when it does not exist."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path}")
    return path


def monoalign_lines(capsys, model, inputs, *flags: str) -> list[str]:
    """`aligners monoalign --model MODEL -i INPUTS FLAGS...` through the command's own
    argument parser; asserts exit status 0; returns the printed lines."""
    from aligners.commands import monoalign

    parser = argparse.ArgumentParser()
    monoalign.add_arguments(parser)
    args = parser.parse_args(["--model", str(model), "-i", str(inputs), *flags])
    assert monoalign.run(args) == 0
    return capsys.readouterr().out.splitlines()
