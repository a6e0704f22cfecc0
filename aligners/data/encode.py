"""Fast one-pass encoding of parallel text files into flat id arrays (block-wise, no
per-sentence Python objects).

Each decoded block of lines becomes one string in which line ends are replaced by a
sentinel token (NUL) and, in the one-file form, the `|||` separator by another (U+0001);
one C-level `split()` and one `map` over a provisional token->id dict then encode the block,
and numpy recovers sentence boundaries and sides from the sentinel positions. The result
is token-for-token what `read_parallel` yields (same splitting, lowercasing, errors), but
text containing NUL or U+0001 characters is rejected (`AlignersInputError`).
"""

from __future__ import annotations

import itertools
import re
from array import array
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from aligners.data.parallel import read_line_blocks
from aligners.data.vocab import Vocab
from aligners.errors import AlignersInputError

__all__ = ["encode_parallel_files"]

_EOL, _SEP = "\x00", "\x01"
_ASCII_WS = re.compile(r"[ \t]+")


class _Side:
    """Accumulates one side: provisional token ids (int32) and tokens per line (int64)."""

    def __init__(self) -> None:
        self.ids = array("i")
        self.counts = array("q")

    def add(self, ids: np.ndarray, line_idx: np.ndarray, n_lines: int) -> None:
        self.ids.frombytes(ids.astype(np.int32, copy=False).tobytes())
        per_line = np.bincount(line_idx, minlength=n_lines).astype(np.int64)
        self.counts.frombytes(per_line.tobytes())

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        ids = np.frombuffer(self.ids, np.int32) if len(self.ids) else np.zeros(0, np.int32)
        counts = np.frombuffer(self.counts, np.int64) if len(self.counts) else np.zeros(0)
        offsets = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        return ids, offsets


def _scan(path, first, *, lowercase: bool, ascii_split: bool, one_file: bool
          ) -> tuple[_Side, _Side | None]:
    """Encode `path` block by block into provisional ids (source side, target side or None).

    Within a block, ids 0 (end of line) and 1 (`|||`) mark structure; numpy turns them
    into per-line token counts, so memory stays O(tokens) int32 + O(block).
    """
    name = "<stdin>" if str(path) == "-" else str(path)
    get = first.__getitem__
    src, tgt = _Side(), (_Side() if one_file else None)
    lines_before = 0
    for lines in read_line_blocks(path):
        text = "\n".join(lines)
        if _EOL in text or _SEP in text:
            bad = next(n for n, x in enumerate(lines) if _EOL in x or _SEP in x)
            raise AlignersInputError(
                "control character U+0000 or U+0001 in the text; expected plain text "
                "(read_parallel accepts it, the fast corpus encoder does not)",
                path=name, line=lines_before + bad + 1,
            )
        text = (text + "\n").replace("\n", f" {_EOL} ")
        if one_file:
            text = text.replace("|||", f" {_SEP} ")
        if lowercase:
            text = text.lower()
        tokens = [t for t in _ASCII_WS.split(text) if t] if ascii_split else text.split()
        raw = np.fromiter(map(get, tokens), np.int32, len(tokens))
        eol = raw == 0
        line_idx = np.cumsum(eol) - eol  # 0-based line of each token within the block
        n_lines = len(lines)
        word = raw > 1
        if not one_file:
            src.add(raw[word], line_idx[word], n_lines)
        else:
            sep = raw == 1
            per_line = np.bincount(line_idx[sep], minlength=n_lines)
            bad = np.flatnonzero(per_line != 1)
            if len(bad):
                n = int(bad[0])
                what = "no '|||' separator" if per_line[n] == 0 else "several '|||' separators"
                raise AlignersInputError(
                    f"expected 'source ||| target' ({what})", path=name,
                    line=lines_before + n + 1,
                )
            side = np.cumsum(sep) - sep - line_idx  # 0 before the line's separator, 1 after
            s_mask, t_mask = word & (side == 0), word & (side == 1)
            src.add(raw[s_mask], line_idx[s_mask], n_lines)
            tgt.add(raw[t_mask], line_idx[t_mask], n_lines)
        lines_before += n_lines
    return src, tgt


def _side(prov, tokens, vocab, *, min_count, max_size):
    if vocab is None:
        counts = np.bincount(prov, minlength=len(tokens))
        vocab = Vocab.from_counts(
            {t: c for t, c in zip(tokens, counts.tolist(), strict=True) if c},
            min_count=max(min_count, 1), max_size=max_size,
        )
    return vocab.lookup_table(tokens)[prov].astype(np.int32, copy=False), vocab


def encode_parallel_files(
    src: str | Path,
    tgt: str | Path | None = None,
    *,
    lowercase: bool = False,
    ascii_split: bool = False,
    min_count: int = 1,
    max_size: int | None = None,
    src_vocab: Vocab | None = None,
    tgt_vocab: Vocab | None = None,
    extra_pairs: Iterable[tuple[Sequence[str], Sequence[str]]] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Vocab, Vocab]:
    """Encode two files (or one `src ||| tgt` file) -> `(src_ids, src_offsets, tgt_ids,
    tgt_offsets, src_vocab, tgt_vocab)`; ids int32, offsets int64 (N + 1,).

    Vocabularies are built with `min_count`/`max_size` unless given (then unknown -> UNK).
    Raises `AlignersInputError` as `read_parallel` does (non-UTF-8 with byte offset,
    different line counts naming both files, a line without exactly one `|||`).
    `extra_pairs` (already tokenised, e.g. a gold test set to align along with the training
    text) are appended after the file's pairs and share the vocabularies; `lowercase`
    applies to them too. Cost: O(total size) time; memory O(tokens) int32 + O(V) strings.
    """
    first: defaultdict[str, int] = defaultdict()
    first.default_factory = first.__len__
    first[_EOL], first[_SEP] = 0, 1
    opts = {"lowercase": lowercase, "ascii_split": ascii_split}
    if tgt is None:
        src_side, tgt_side = _scan(src, first, one_file=True, **opts)
    else:
        src_side, _ = _scan(src, first, one_file=False, **opts)
        tgt_side, _ = _scan(tgt, first, one_file=False, **opts)
    ns, nt = len(src_side.counts), len(tgt_side.counts)
    if ns != nt:
        short, long_, n = (src, tgt, ns) if ns < nt else (tgt, src, nt)
        raise AlignersInputError(
            f"different line counts: {short} has {n} lines but {long_} continues at line "
            f"{n + 1}; expected one sentence per line in both",
            path=str(long_), line=n + 1,
        )
    if extra_pairs is not None:
        get = first.__getitem__
        it = iter(extra_pairs)
        while chunk := list(itertools.islice(it, 8192)):
            for side, sents in ((src_side, [p[0] for p in chunk]),
                                (tgt_side, [p[1] for p in chunk])):
                if lowercase:
                    sents = [[w.lower() for w in x] for x in sents]
                flat = itertools.chain.from_iterable(sents)
                side.ids.extend(map(get, flat))
                side.counts.extend(map(len, sents))
    (s_prov, s_off), (t_prov, t_off) = src_side.arrays(), tgt_side.arrays()
    tokens = list(first)
    s_ids, s_voc = _side(s_prov, tokens, src_vocab, min_count=min_count, max_size=max_size)
    t_ids, t_voc = _side(t_prov, tokens, tgt_vocab, min_count=min_count, max_size=max_size)
    return s_ids, s_off, t_ids, t_off, s_voc, t_voc
