"""Parallel text: two aligned files, or one `src ||| tgt` file (fast_align / eflomal input).

Files are UTF-8 (a leading BOM is stripped; CRLF line ends are accepted); `.gz` files are
read and written transparently; `-` means stdin/stdout. Tokens are whitespace-separated.
Empty sentences are kept as empty lists and stay in place.
"""

from __future__ import annotations

import gzip
import itertools
import os
import re
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from aligners.errors import AlignersInputError

__all__ = [
    "is_plain_file",
    "read_line_blocks",
    "read_lines",
    "read_parallel",
    "read_xml",
    "write_lines",
]

_BOM = b"\xef\xbb\xbf"
_ASCII_WS = re.compile(r"[ \t]+")


def is_plain_file(path) -> bool:
    """Whether `path` names a regular, uncompressed file (not stdin `-`, not .gz/.xz/.bz2):
    one that can be read again or in one piece."""
    path = str(path)
    return path != "-" and not path.endswith((".gz", ".xz", ".bz2")) and os.path.isfile(path)


@contextmanager
def _open_binary(path: str | Path) -> Iterator[IO[bytes]]:
    if str(path) == "-":
        yield sys.stdin.buffer
        return
    p = Path(path)
    if not p.exists():
        raise AlignersInputError("file not found", path=str(p))
    if p.is_dir():
        raise AlignersInputError("is a directory; expected a file", path=str(p))
    opener = gzip.open if p.suffix == ".gz" else open
    try:
        handle = opener(p, "rb")
    except OSError as err:
        raise AlignersInputError(f"cannot open: {err.strerror or err}", path=str(p)) from None
    with handle:
        yield handle


def read_line_blocks(path: str | Path, *, block_bytes: int = 1 << 20) -> Iterator[list[str]]:
    """Yield the decoded lines of `path` in blocks of about `block_bytes` bytes.

    Lines come without line ends (LF or CRLF; a lone CR inside a line is kept); a leading
    UTF-8 BOM is stripped. Non-UTF-8 bytes raise `AlignersInputError` naming the file, the
    1-based line, the byte offset in the (decompressed) file and the byte column.
    Cost: O(file size) time, O(block_bytes + longest line) memory.
    """
    name = "<stdin>" if str(path) == "-" else str(path)
    offset = 0
    lines_before = 0
    bom = 0
    with _open_binary(path) as handle:
        rest = b""
        while True:
            try:
                chunk = handle.read(block_bytes)
            except (OSError, EOFError, zlib.error) as err:  # e.g. a corrupt/truncated gzip
                raise AlignersInputError(
                    f"cannot read ({err}); expected a readable (for .gz: complete gzip) file",
                    path=name, line=lines_before + 1) from None
            cut = chunk.rfind(b"\n") + 1  # (0 at the end: the rest is the last block)
            if chunk and cut == 0:  # no line end in this chunk: keep reading
                rest += chunk
                continue
            if not chunk and not rest:
                return
            block, rest = rest + chunk[:cut], chunk[cut:]
            start = offset
            offset += len(block)
            if start == 0 and block.startswith(_BOM):
                block = block[len(_BOM):]
                start = bom = len(_BOM)
            try:
                text = block.decode("utf-8")
            except UnicodeDecodeError as err:
                line_start = block.rfind(b"\n", 0, err.start) + 1
                if lines_before == 0 and line_start == 0:
                    line_start = -bom  # a stripped BOM counts in the byte column of line 1
                raise AlignersInputError(
                    f"invalid UTF-8 byte 0x{block[err.start]:02x} at byte offset "
                    f"{start + err.start} (byte column {err.start - line_start + 1}); "
                    "expected UTF-8 text",
                    path=name,
                    line=lines_before + block.count(b"\n", 0, err.start) + 1,
                ) from None
            lines = text.split("\n")
            if text.endswith("\n"):
                lines.pop()
            if "\r" in text:
                lines = [x[:-1] if x.endswith("\r") else x for x in lines]
            lines_before += len(lines)
            yield lines


def read_lines(path: str | Path) -> Iterator[str]:
    """Yield the decoded lines of `path` one by one (see `read_line_blocks`)."""
    return itertools.chain.from_iterable(read_line_blocks(path))


def read_xml(path: str | Path, *, expected: str):
    """The root element of the XML file `path`, read as `read_lines` reads text (BOM, CRLF,
    bad UTF-8 reported with file and line); malformed XML raises `AlignersInputError` naming
    the file, the line and what was `expected` (e.g. "an RTE-5 file"). O(file size)."""
    import xml.etree.ElementTree as ET

    try:
        return ET.fromstring("\n".join(read_lines(path)).encode("utf-8"))
    except ET.ParseError as err:
        raise AlignersInputError(f"invalid XML ({err}); expected {expected}", path=str(path),
                                 line=err.position[0]) from None


def _tokenizer(lowercase: bool, ascii_split: bool) -> Callable[[str], list[str]]:
    """The whitespace tokenizer of a sentence, its options fixed (no option handling per
    line); `ascii_split` splits on ASCII space/tab only, keeping e.g. U+3000 (ideographic
    space) as a token, as the KFTT Ja-En gold counts it."""
    split = (lambda text: [t for t in _ASCII_WS.split(text) if t]) if ascii_split else str.split
    return (lambda text: split(text.lower())) if lowercase else split


def read_parallel(
    src: str | Path,
    tgt: str | Path | None = None,
    *,
    lowercase: bool = False,
    ascii_split: bool = False,
) -> Iterator[tuple[list[str], list[str]]]:
    """Stream `(source_tokens, target_tokens)` pairs from one `source ||| target` file (`tgt=None`)
    or two files of one sentence per line. Cost: O(total size) time, O(one line) memory.

    Raises `AlignersInputError` for non-UTF-8 bytes, a line without ` ||| `, or files of
    different line counts (naming both files and the first unmatched line).
    """

    tokens = _tokenizer(lowercase, ascii_split)
    if tgt is None:
        name = "<stdin>" if str(src) == "-" else str(src)
        for lineno, text in enumerate(read_lines(src), start=1):
            if "|||" not in text:
                raise AlignersInputError(
                    "expected 'source ||| target' (no '|||' separator)", path=name, line=lineno
                )
            left, _, right = text.partition("|||")
            if "|||" in right:
                raise AlignersInputError(
                    "expected one '|||' separator, found several", path=name, line=lineno
                )
            yield tokens(left), tokens(right)
        return
    if str(src) == "-" and str(tgt) == "-":
        raise AlignersInputError("source and target cannot both be stdin ('-')")
    missing = object()
    for lineno, (s, t) in enumerate(
        itertools.zip_longest(read_lines(src), read_lines(tgt), fillvalue=missing), start=1
    ):
        if s is missing or t is missing:
            short, long_ = (src, tgt) if s is missing else (tgt, src)
            raise AlignersInputError(
                f"different line counts: {short} has {lineno - 1} lines but {long_} "
                f"continues at line {lineno}; expected one sentence per line in both",
                path=str(long_),
                line=lineno,
            )
        yield tokens(s), tokens(t)


def write_lines(out: str | Path | IO[str], lines: Iterable[str]) -> int:
    """Write `lines` (without their line ends) to a path (`aligners.outputs.write_lines`: `-` =
    stdout, `.gz` gzipped, a file written atomically) or an open handle, one a line; return
    how many. Cost: O(total size) time, O(one line) memory."""
    if isinstance(out, str | Path):
        from aligners.outputs import write_lines as write_checked

        return write_checked(str(out), lines, flag="output")
    count = 0
    for count, line in enumerate(lines, start=1):  # noqa: B007 (the count afterwards)
        out.write(line + "\n")
    return count
