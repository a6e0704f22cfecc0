"""GIZA++ A3-style alignment files, as in the MSR RTE-2006 release.

Three lines per pair: a `# ...` header, the source (MSR06: the Text T), the target (the
Hypothesis H) as `NULL ({ ... }) w1 ({ 4 p1 p2 / / }) ...`: 1-based source positions per
target word, `p` = possible, `/` ignored, NULL's links dropped. Output 0-based (T index, H
index). U+FEFF is removed; a last `({ ... }` without `)` is accepted.
"""

from __future__ import annotations

import re
from pathlib import Path

from aligners.data.parallel import read_lines
from aligners.data.pharaoh import check_pair_ranges
from aligners.data.types import AlignedPair, Alignment
from aligners.errors import AlignersInputError

__all__ = ["parse_a3_target", "read_a3"]

_WORD = re.compile(r"(\S+) \(\{([^}]*)\}\)")
_POS = re.compile(r"(p?)(\d+)\Z")


def parse_a3_target(
    text: str, *, path: str | None = None, line: int | None = None
) -> tuple[tuple[str, ...], Alignment]:
    """Parse `NULL ({ .. }) w ({ 1 p2 / / }) ...` -> (target words, 0-based Alignment).

    Cost: O(len(text)). Anything that is not `word ({ numbers })` raises
    `AlignersInputError` naming `path` and `line`.
    """
    words: list[str] = []
    sure, possible = set(), set()
    text = text.rstrip()
    if text.endswith("}"):  # orig/RTE2_dev_C's last line lacks its final ')'
        text += ")"
    pos = 0
    matches = list(_WORD.finditer(text))
    for k, m in enumerate(matches):
        if text[pos:m.start()].strip():
            raise AlignersInputError(
                f"unexpected text {text[pos:m.start()].strip()[:30]!r}; expected "
                "'word ({ positions })'", path=path, line=line,
            )
        pos = m.end()
        if k == 0 and m.group(1) == "NULL":
            continue
        j = len(words)
        words.append(m.group(1))
        for tok in m.group(2).split():
            if tok == "/":
                continue
            pm = _POS.match(tok)
            if pm is None or int(pm.group(2)) == 0:
                raise AlignersInputError(
                    f"malformed position {tok!r} for word {m.group(1)!r}; expected N or pN, "
                    "N >= 1", path=path, line=line,
                )
            link = (int(pm.group(2)) - 1, j)
            (possible if pm.group(1) else sure).add(link)
    if text[pos:].strip() or not matches:
        raise AlignersInputError(
            "expected 'NULL ({ }) word ({ positions }) ...'", path=path, line=line
        )
    return tuple(words), Alignment(frozenset(sure), frozenset(possible))


def read_a3(path: str | Path, *, lenient: bool = False) -> list[AlignedPair]:
    """Read an A3 file -> `AlignedPair(src = T tokens, tgt = H words, alignment, id)`.

    The id is the number in a `# sentence pair N` header (else the block number).
    Links past the end of T raise, or with `lenient=True` are dropped and counted.
    Cost: O(file size).
    """
    name = str(path)
    lines = [(n, x.replace("\ufeff", "")) for n, x in enumerate(read_lines(path), start=1)]
    lines = [(n, x) for n, x in lines if x.strip()]
    if len(lines) % 3:
        raise AlignersInputError(
            f"{len(lines)} non-empty lines; expected blocks of 3 (header, source, target)",
            path=name,
        )
    pairs, starts = [], []
    for b in range(0, len(lines), 3):
        (n0, head), (_, src), (n2, tgt) = lines[b:b + 3]
        if not head.startswith("#"):
            raise AlignersInputError("expected a '# sentence pair N' header", path=name, line=n0)
        num = re.search(r"(\d+)", head)
        words, al = parse_a3_target(tgt, path=name, line=n2)
        pairs.append(AlignedPair(tuple(src.split()), words, al,
                                 num.group(1) if num else str(b // 3 + 1)))
        starts.append(n2)
    return check_pair_ranges(pairs, lenient=lenient, path=name, line_numbers=starts,
                             target=False)
