"""Shared test helpers: the shipped data folders (`../shared/data`, or $ALIGNERS_DATA).

Tests that read shipped data or oracles use `shared_path(...)`, which skips the test only
when the folder truly is absent (e.g. a clone without the shared data next to it).
"""

import argparse
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


def monoalign_lines(capsys, model, inputs, *flags: str) -> list[str]:
    """`aligners monoalign --model MODEL -i INPUTS FLAGS...` through the command's own
    argument parser; asserts exit status 0; returns the printed lines."""
    from aligners.commands import monoalign

    parser = argparse.ArgumentParser()
    monoalign.add_arguments(parser)
    args = parser.parse_args(["--model", str(model), "-i", str(inputs), *flags])
    assert monoalign.run(args) == 0
    return capsys.readouterr().out.splitlines()
