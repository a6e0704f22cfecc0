"""Reader for the NEWS shared-task transliteration XML (`news2012-translit-enhe`).

`<Name ID><SourceName>Abbas</SourceName><TargetName ID="1">עבאס</TargetName></Name>`; a name
may list several `TargetName`s (all kept, first first). Cost: O(file size).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aligners.data.parallel import read_xml
from aligners.errors import AlignersInputError

__all__ = ["NamePair", "read_news_translit"]


@dataclass(frozen=True)
class NamePair:
    """One name: `source` (English) and its `targets` (transliterations, >= 1)."""

    id: str
    source: str
    targets: tuple[str, ...]

    @property
    def target(self) -> str:
        return self.targets[0]


def read_news_translit(path: str | Path) -> list[NamePair]:
    """Read a NEWS XML file -> `NamePair`s in file order. A malformed file or a name without
    a source or target raises `AlignersInputError` naming the file (and line for XML errors)."""
    root = read_xml(path, expected="a NEWS transliteration corpus")
    out = []
    for n, name in enumerate(root.iter("Name"), start=1):
        src = (name.findtext("SourceName") or "").strip()
        tgts = tuple(t for t in ((e.text or "").strip() for e in name.findall("TargetName")) if t)
        if not src or not tgts:
            raise AlignersInputError(f"name {n} (ID={name.get('ID')}): expected a non-empty "
                                     "<SourceName> and at least one <TargetName>", path=str(path))
        out.append(NamePair(str(name.get("ID", n)), src, tgts))
    if not out:
        raise AlignersInputError("no <Name> entries found", path=str(path))
    return out
