"""Monolingual gold alignments that carry their own text: jacana JSON and MultiMWA TSV.

jacana JSON: an array of `{id, name, source, target, sureAlign, possibleAlign}`, links `i-j`
0-based, i indexes `source`. `*.sure+poss.json` files hold S∪P in `sureAlign` and the P
subset in `possibleAlign` (`sure_plus_poss=True`; one rule everywhere: `text_format`).
MultiMWA TSV (Lan et al. 2021): 10 tab-separated columns `id, sent1, N/A, sent2, N/A, 1, 1,
sure, possible, ''`, source = sentence 1. `read_annotated(spec)` reads a user's annotated
monolingual data in either format or as Pharaoh + text (three files).
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from aligners.data.parallel import read_lines
from aligners.data.pharaoh import check_pair_ranges, parse_pharaoh_line, read_pharaoh
from aligners.data.types import AlignedPair, Alignment
from aligners.errors import AlignersInputError

__all__ = ["TEXT_READERS", "read_jacana_json", "read_multimwa", "read_annotated", "text_format"]

_KEYS = ("source", "target", "sureAlign")


def text_format(path: str | Path) -> str | None:
    """The notation of a gold file that carries its text, from its name alone: `.json` ->
    `jacana` (`jacana-sp` if the name has `sure+poss`), `.tsv` -> `multimwa` (`.gz` too);
    None for any other name."""
    name = Path(str(path)).name
    if name.endswith(".json") or name.endswith(".json.gz"):
        return "jacana-sp" if "sure+poss" in name else "jacana"
    if name.endswith(".tsv") or name.endswith(".tsv.gz"):
        return "multimwa"
    return None


def _pair(src: str, tgt: str, sure: str, possible: str, *, sure_plus_poss: bool = False,
          ident: str | None, path: str, line: int) -> AlignedPair:
    """The pair of two texts and their sure / possible `i-j` links (`sure_plus_poss`: `sure`
    holds S∪P and `possible` the P subset); malformed links name `path` and `line`."""
    s = parse_pharaoh_line(sure, path=path, line=line).possible
    p = parse_pharaoh_line(possible, path=path, line=line).possible
    al = Alignment(s - p, s | p) if sure_plus_poss else Alignment(s, p)
    return AlignedPair(tuple(src.split()), tuple(tgt.split()), al, ident)


def read_jacana_json(
    path: str | Path, *, sure_plus_poss: bool = False, lenient: bool = False
) -> list[AlignedPair]:
    """Read a jacana JSON file -> `AlignedPair`s (src = `source`, tgt = `target`, 0-based).

    Links outside the whitespace-tokenised sentences raise (the "line" in the message is
    the 1-based item number), or are dropped with `lenient=True`. Cost: O(file size).
    """
    name = str(path)
    try:  # (read_lines: the UTF-8 check with byte offsets, BOM stripped)
        data = json.loads("\n".join(read_lines(path)))
    except json.JSONDecodeError as err:
        raise AlignersInputError(
            f"invalid JSON ({err.msg}, column {err.colno}); expected a jacana JSON array",
            path=name,
            line=err.lineno,
        ) from None
    if not isinstance(data, list):
        raise AlignersInputError("expected a JSON array of alignment objects", path=name)
    pairs = []
    for n, item in enumerate(data, start=1):
        if not isinstance(item, dict) or any(k not in item for k in _KEYS):
            raise AlignersInputError(
                f"item {n}: expected an object with keys {list(_KEYS)}", path=name, line=n
            )
        ident = item.get("id", item.get("name"))
        pairs.append(_pair(str(item["source"]), str(item["target"]), str(item["sureAlign"]),
                           str(item.get("possibleAlign") or ""), sure_plus_poss=sure_plus_poss,
                           ident=None if ident is None else str(ident), path=name, line=n))
    return check_pair_ranges(pairs, lenient=lenient, path=name)


def read_multimwa(path: str | Path, *, lenient: bool = False) -> list[AlignedPair]:
    """Read a MultiMWA TSV file -> `AlignedPair`s (src = sentence 1, tgt = sentence 2).

    Each line must have 10 tab-separated fields (8 are accepted: trailing empty columns
    may be cut); column 8 = sure, column 9 = possible links, 0-based. Cost: O(file size).
    """
    name = str(path)
    pairs = []
    lines = []
    for lineno, text in enumerate(read_lines(path), start=1):
        if not text.strip():
            continue
        cols = text.split("\t")
        if not 8 <= len(cols) <= 10:
            raise AlignersInputError(
                f"{len(cols)} tab-separated fields; expected 10 (id, sentence 1, N/A, "
                "sentence 2, N/A, 1, 1, sure links, possible links, empty)",
                path=name,
                line=lineno,
            )
        pairs.append(_pair(cols[1], cols[3], cols[7], cols[8] if len(cols) > 8 else "",
                           ident=cols[0], path=name, line=lineno))
        lines.append(lineno)
    return check_pair_ranges(pairs, lenient=lenient, path=name, line_numbers=lines)


# the reader of each notation that carries its text, by its `text_format` name
TEXT_READERS = {"jacana": read_jacana_json, "multimwa": read_multimwa,
                "jacana-sp": partial(read_jacana_json, sure_plus_poss=True)}


def read_annotated(spec, *, what: str = "annotated data") -> list[AlignedPair]:
    """Gold-annotated pairs from `spec`: a jacana `.json` (`*.sure+poss.json` read with
    `sure_plus_poss=True`, as `aligners evaluate --gold` does), a MultiMWA `.tsv`, or a list
    of three files `[source text, target text, Pharaoh links]` (whitespace tokens, one pair
    per line). `what` names the option in errors. Cost: O(total size)."""
    if isinstance(spec, str | Path):
        path = str(spec)
        read = TEXT_READERS.get(text_format(path))
        if read is None:
            raise AlignersInputError(
                f"{what}: expected a jacana .json, a MultiMWA .tsv, or [SRC, TGT, LINKS] "
                "(Pharaoh + text: three files)", path=path)
        pairs = read(path)
    else:
        files = [str(f) for f in spec]
        if len(files) != 3:
            raise AlignersInputError(f"{what}: expected one .json/.tsv file or three files "
                                     f"[SRC, TGT, LINKS], got {len(files)}")
        src = [tuple(line.split()) for line in read_lines(files[0])]
        tgt = [tuple(line.split()) for line in read_lines(files[1])]
        if len(src) != len(tgt):
            raise AlignersInputError(f"{len(src)} source lines but {files[1]} has {len(tgt)}; "
                                     "expected one sentence pair per line", path=files[0])
        for side, sents, f in (("source", src, files[0]), ("target", tgt, files[1])):
            for n, s in enumerate(sents, start=1):
                if not s:
                    raise AlignersInputError(f"empty {side} sentence; expected tokens",
                                             path=f, line=n)
        als = read_pharaoh(files[2], src_lengths=[len(s) for s in src],
                           tgt_lengths=[len(t) for t in tgt])
        pairs = [AlignedPair(s, t, al, str(n)) for n, (s, t, al) in
                 enumerate(zip(src, tgt, als, strict=True), start=1)]
    if not pairs:
        raise AlignersInputError(f"{what}: no sentence pairs", path=str(spec))
    return pairs
