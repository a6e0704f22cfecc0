"""THE output rule of every command: `check_paths` and `check_model_dir` refuse, before any
work, outputs that would destroy an input or cannot be written; `open_output` / `write_lines`
write them (nothing partial is left on an error or Ctrl-C). Every failure is one
`AlignersInputError` line naming the flag. Cost: O(1) system calls per path.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from aligners.errors import AlignersInputError

MODEL_FORMAT = "aligners/1"  # the `format` of a model folder's config.json (aligners.export)

__all__ = ["check_paths", "write_lines", "open_output", "flush_stdout", "check_model_dir",
           "model_dir_problem", "check_writable_folder", "check_folder_path"]


def _given(path) -> bool:
    return path is not None and str(path) not in ("", "-")


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)  # follows symbolic links
    except OSError:
        return None


def _same(a: str, b: str) -> bool:
    """Whether paths `a` and `b` name one file: the same inode (hard links, symbolic links,
    relative vs absolute) or, when either does not exist yet, the same resolved path."""
    sa, sb = _stat(a), _stat(b)
    if sa is not None and sb is not None:
        return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)
    return os.path.realpath(a) == os.path.realpath(b)


def _why(err: OSError) -> str:
    return err.strerror or str(err)


def check_writable_folder(folder: str, *, flag: str, path: str) -> None:
    """Create and remove a file in `folder` (a real probe: root passes `os.access` on
    /proc); AlignersInputError naming `flag` and `path` when that fails."""
    if not os.path.isdir(folder):
        raise AlignersInputError(f"{flag}: cannot write: the folder {folder} does not exist; "
                                 "create it first or give another output path", path=path)
    try:
        fd, probe = tempfile.mkstemp(prefix=".aligners-probe.", dir=folder)
    except OSError as err:
        raise AlignersInputError(f"{flag}: cannot write in {folder} ({_why(err)}); expected "
                                 "a writable folder", path=path) from None
    os.close(fd)
    os.unlink(probe)


def check_folder_path(path: str, *, flag: str) -> None:
    """`path` is a folder, or can be made one, that this run may write in: not a file, and
    its nearest existing folder writable (`check_writable_folder`)."""
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise AlignersInputError(f"{flag}: exists and is not a folder", path=path)
    while not p.exists():
        p = p.parent
    check_writable_folder(str(p), flag=flag, path=path)


def _check_writable(path: str, flag: str) -> None:
    st = _stat(path)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise AlignersInputError(f"{flag}: is a folder; expected an output file path",
                                 path=path)
    if st is not None and not stat.S_ISREG(st.st_mode):  # a device or FIFO: written through
        if not os.access(path, os.W_OK):
            raise AlignersInputError(f"{flag}: not writable", path=path)
        return
    if st is not None and not os.access(path, os.W_OK):
        raise AlignersInputError(f"{flag}: the file is not writable (read-only); expected a "
                                 "writable output path", path=path)
    check_writable_folder(os.path.dirname(os.path.realpath(path)) or ".", flag=flag, path=path)


def check_paths(inputs: dict[str, str | None], outputs: dict[str, str | None]) -> None:
    """Refuse, before any work, outputs that would destroy a file or cannot be written.

    `inputs` / `outputs`: flag -> path (None or `-`, stdin/stdout, skipped). Raises
    AlignersInputError (one line naming both flags) when an output is the same file as an
    input or as another output (a character device such as /dev/null may be shared), or
    when an output cannot be written (a folder, a missing or unwritable parent folder, a
    read-only file)."""
    seen: list[tuple[str, str]] = [(f, str(p)) for f, p in inputs.items() if _given(p)]
    n_inputs = len(seen)
    for flag, path in outputs.items():
        if not _given(path):
            continue
        path = str(path)
        for k, (other_flag, other) in enumerate(seen):
            if _same(path, other):
                st = _stat(path)
                if st is not None and stat.S_ISCHR(st.st_mode):
                    continue  # /dev/null and the like cannot be destroyed
                what = "input" if k < n_inputs else "output"
                raise AlignersInputError(
                    f"{flag} {path} is also an {what} ({other_flag} {other}, the same file); "
                    f"expected a different output path (writing would destroy it)")
        _check_writable(path, flag)
        seen.append((flag, path))


class _Checked:
    """A text handle whose write errors are one AlignersInputError line naming `flag`."""

    def __init__(self, handle: IO[str], *, flag: str, dest: str):
        self._h, self._flag, self._dest = handle, flag, dest

    def _fail(self, err: OSError) -> Exception:
        """The exception to raise for `err`: a closed pipe stays BrokenPipeError (`| head`
        is not an error), anything else is one AlignersInputError line."""
        if self._dest == "-":
            _quiet_stdout()  # what is left in the buffer is dropped, not flushed at exit
            if isinstance(err, BrokenPipeError):
                return err
            return AlignersInputError(f"cannot write ({_why(err)}); expected a writable "
                                      "stdout", path="stdout")
        return AlignersInputError(f"{self._flag}: cannot write ({_why(err)}); expected a "
                                  "writable output with free space", path=self._dest)

    def write(self, text: str) -> int:
        try:
            return self._h.write(text)
        except OSError as err:
            raise self._fail(err) from None

    def flush(self) -> None:
        try:
            self._h.flush()
        except OSError as err:
            raise self._fail(err) from None


def _quiet_stdout() -> None:
    """Point fd 1 at /dev/null so that the interpreter's last flush of unwritable stdout
    neither fails nor prints (`Exception ignored ... BrokenPipeError`)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a replaced stdout (tests): nothing to do
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def flush_stdout() -> None:
    """Flush stdout. A full or unwritable stdout (`> /dev/full`) raises AlignersInputError
    (one line); a closed pipe (`| head`) re-raises BrokenPipeError. Either way the rest of
    the buffer is dropped quietly."""
    _Checked(sys.stdout, flag="stdout", dest="-").flush()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def open_output(dest: str, *, flag: str = "-o") -> Iterator[IO[str]]:
    """A text handle (UTF-8, LF) on `dest` under the rules of this module: `-` = stdout
    (flushed at the end), `.gz` gzipped, a regular or new file atomically (a temporary file
    beside it, fsynced and renamed when the block ends without error; its mode kept, a
    symbolic link keeps pointing at its new target), a device or FIFO written through (never
    replaced, never synced). Write errors are one AlignersInputError line naming `flag`."""
    dest = str(dest)
    if dest == "-":
        yield _Checked(sys.stdout, flag=flag, dest="-")
        flush_stdout()
        return
    st = _stat(dest)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise AlignersInputError(f"{flag}: is a folder; expected an output file path",
                                 path=dest)
    tmp = None
    try:
        if st is None or stat.S_ISREG(st.st_mode):
            target = os.path.realpath(dest)
            mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
            fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp",
                                       dir=os.path.dirname(target) or ".")
            raw = os.fdopen(fd, "wb")
        else:
            raw = open(dest, "wb")  # noqa: SIM115 - closed below
    except OSError as err:
        raise AlignersInputError(f"{flag}: cannot write ({_why(err)}); expected a writable "
                                 "output path", path=dest) from None
    gz = gzip.GzipFile(fileobj=raw, mode="wb") if dest.endswith(".gz") else None
    text = io.TextIOWrapper(gz or raw, encoding="utf-8", newline="\n")
    handle = _Checked(text, flag=flag, dest=dest)
    try:
        yield handle
        handle.flush()
        try:
            if gz is not None:
                text.close()  # the gzip trailer, into `raw` (left open)
            raw.flush()
            if tmp is not None:
                os.fsync(raw.fileno())
            text.close()
            raw.close()
            if tmp is not None:
                os.chmod(tmp, mode)
                os.replace(tmp, target)
                tmp = None
        except OSError as err:
            raise handle._fail(err) from None
    finally:
        for f in (text, raw):
            with contextlib.suppress(Exception):
                f.close()
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_lines(dest: str, lines: Iterable[str], *, flag: str = "-o") -> int:
    """Write each of `lines` (without its line end) followed by `\\n` to `dest` under the
    rules of `open_output`; returns how many. Memory: one line at a time."""
    n = 0
    with open_output(dest, flag=flag) as out:
        for n, line in enumerate(lines, start=1):  # noqa: B007 (n is the count afterwards)
            out.write(f"{line}\n")
    return n


def model_dir_problem(folder: str | Path, kinds: tuple[str, ...] | None = None) -> str | None:
    """None when `folder` may be replaced by a new model folder: it does not exist, is an
    empty folder, or is a model folder of ours (a `config.json` of format `aligners/1` and
    nothing but `model.safetensors` and `*.json` files) whose kind is one of `kinds` (any
    kind when None). Else what it is, for a message."""
    p = Path(folder)
    if not p.exists():
        return None
    if not p.is_dir():
        return "exists and is not a folder"
    entries = list(p.iterdir())
    if not entries:
        return None
    try:  # a config.json of our format (aligners.export writes it)
        config = json.loads((p / "config.json").read_bytes())
        ours = config.get("format") == MODEL_FORMAT
    except (OSError, ValueError, AttributeError):
        ours = False
    if not ours:
        return "is a folder that is not empty and not a model folder (no aligners config.json)"
    if kinds is not None and config.get("kind") not in kinds:
        return (f"holds a {config.get('kind')!r} model, which this command does not write "
                "(give --overwrite to replace it)")
    for e in entries:
        if not (e.is_file() and not e.is_symlink()
                and (e.name == "model.safetensors" or e.name.endswith(".json"))):
            return f"is a model folder that also holds {e.name!r}, which replacing it would lose"
    return None


def check_model_dir(path: str | None, flag: str, *,
                    others: dict[str, str | None] | None = None,
                    kinds: tuple[str, ...] | None = None, overwrite: bool = False) -> None:
    """Refuse, before any work, a model folder path that would lose the user's files.

    Accepted: a new path, an empty folder, a model folder of ours of one of `kinds` (any
    kind with `overwrite`; `model_dir_problem`). Refused (one AlignersInputError line naming
    `flag`): anything else, the current folder or a folder holding it, one of `others` or
    a folder holding one (flag -> path of the run's inputs and other outputs), and a place
    whose folder cannot be written."""
    if not _given(path):
        return
    path = str(path)
    real = Path(os.path.realpath(path))
    if Path(os.path.realpath(os.getcwd())).is_relative_to(real):
        raise AlignersInputError(f"{flag}: is the current folder (or holds it); expected a "
                                 "new folder path for the model", path=path)
    for other_flag, other in (others or {}).items():
        other_real = Path(os.path.realpath(str(other))) if _given(other) else None
        if other_real is not None and other_real.is_relative_to(real):
            what = "is" if real == other_real else "holds"
            raise AlignersInputError(f"{flag}: {what} {other_flag} {other}; expected a model "
                                     "folder apart from the run's other files", path=path)
    problem = model_dir_problem(real, None if overwrite else kinds)
    if problem is not None:
        raise AlignersInputError(f"{flag}: {problem}; expected a new path, an empty folder "
                                 "or a model folder to replace", path=path)
    check_folder_path(str(real.parent), flag=flag)
