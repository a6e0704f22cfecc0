"""Where the shipped data lives: `$ALIGNERS_DATA`, default `../shared/data` next to the repo."""

import os
from pathlib import Path

__all__ = ["data_root", "dataset_dir"]

_REPO = Path(__file__).resolve().parents[2]


def data_root() -> Path:
    """The data folder: env var ALIGNERS_DATA, else `<repo>/../shared/data`."""
    env = os.environ.get("ALIGNERS_DATA")
    return Path(env) if env else (_REPO.parent / "shared" / "data")


def dataset_dir(name: str) -> Path:
    """`data_root() / name`, with a clear error when it is missing."""
    path = data_root() / name
    if not path.is_dir():
        raise FileNotFoundError(
            f"dataset folder {path} not found; set ALIGNERS_DATA to the folder holding {name}/"
        )
    return path
