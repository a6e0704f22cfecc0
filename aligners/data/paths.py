"""Where the shipped data lives: `$ALIGNERS_DATA`, else `../shared/data` next to the checkout
(outside a checkout: `./shared/data`); a missing folder is one `DataFolderMissing` line.
"""

import os
from contextlib import contextmanager
from pathlib import Path

from aligners.errors import AlignersInputError

__all__ = ["DataFolderMissing", "data_root", "dataset_dir", "in_checkout", "data_root_set_to"]

_REPO = Path(__file__).resolve().parents[2]


class DataFolderMissing(AlignersInputError, FileNotFoundError):
    """The data folder (or one dataset in it) is not there: one line, names the path."""


def in_checkout() -> bool:
    """True when this package is imported from a source checkout (pyproject.toml beside it)."""
    return (_REPO / "pyproject.toml").is_file() and (_REPO / "aligners").is_dir()


def data_root() -> Path:
    """The data folder: env var ALIGNERS_DATA, else `<checkout>/../shared/data` (installed
    package: `./shared/data`). O(1); does not check that it exists (see `dataset_dir`)."""
    env = os.environ.get("ALIGNERS_DATA")
    if env:
        return Path(env)
    if in_checkout():
        return _REPO.parent / "shared" / "data"
    return Path.cwd() / "shared" / "data"


def dataset_dir(name: str) -> Path:
    """`data_root() / name`; a missing folder raises `DataFolderMissing` (one line)."""
    root = data_root()
    for what, folder in (("data folder", root), ("dataset folder", root / name)):
        if not folder.is_dir():
            raise DataFolderMissing(f"{what} {folder} not found; set ALIGNERS_DATA to the folder "
                                    f"that holds {name}/")
    return root / name


@contextmanager
def data_root_set_to(root):
    """Within the block, `data_root()` is `root` (a config's `paths.data_root`); None or ""
    leaves it as it is. The previous `ALIGNERS_DATA` is restored afterwards."""
    if not root:
        yield
        return
    old = os.environ.get("ALIGNERS_DATA")
    os.environ["ALIGNERS_DATA"] = str(root)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("ALIGNERS_DATA", None)
        else:
            os.environ["ALIGNERS_DATA"] = old
