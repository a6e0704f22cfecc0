"""Two parallel text files encoded to word ids straight from their bytes, in compiled passes:
no Python string per token and no Python step per sentence (`aligners align -s -t` at 1M+
pairs reads at disk speed).

`build_index` takes the compiled path (`ParallelFiles.encode`) when it is given a
`ParallelFiles`; it gives exactly what `str.split()` on the decoded lines gives, or declines
(None, and the Python reader runs, with every check of `read_parallel`): a compressed or
unreadable file, text that is not valid UTF-8, a non-ASCII whitespace character (which
`str.split` splits on), a line whose first token starts with `<s` (the `<s snum=N>` wrapper
the command strips), files of different line counts or with no line, and a vocabulary that
is not fresh.
"""

from __future__ import annotations

import codecs
import contextlib
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from aligners.data.parallel import _BOM, is_plain_file
from aligners.data.vocab import WordIds

__all__ = ["ParallelFiles", "encode_bytes"]

# the bytes str.split() splits on (with \n, the line end): \t \n \v \f \r \x1c-\x1f space
_WS = np.zeros(256, np.bool_)
_WS[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True


@njit(nogil=True, cache=True)
def _other_space(data, p):
    """True when the UTF-8 character at p is a non-ASCII whitespace character (U+0085,
    U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000)."""
    n, b = len(data), data[p]
    c1 = data[p + 1] if p + 1 < n else 0
    c2 = data[p + 2] if p + 2 < n else 0
    if b == 0xC2:
        return c1 == 0x85 or c1 == 0xA0
    if b == 0xE1:
        return c1 == 0x9A and c2 == 0x80
    if b == 0xE2:
        return (c1 == 0x80 and (c2 <= 0x8A or c2 == 0xA8 or c2 == 0xA9 or c2 == 0xAF)) or (
            c1 == 0x81 and c2 == 0x9F)
    return b == 0xE3 and c1 == 0x80 and c2 == 0x80


@njit(nogil=True, cache=True)
def _count(data, ws):
    """(tokens, lines) of UTF-8 bytes `data`, or (-1, -1) where `str.split` would read them
    differently (a non-ASCII space; a line's first token starting with `<s`). O(bytes)."""
    n = len(data)
    tokens, lines, first = 0, 0, True
    p = 0
    while p < n:
        b = data[p]
        if b == 10:
            lines += 1
            first = True
            p += 1
        elif ws[b]:
            p += 1
        else:
            if first and b == 60 and p + 1 < n and data[p + 1] == 115:  # "<s"
                return -1, -1
            first = False
            tokens += 1
            while p < n and not ws[data[p]]:
                if data[p] >= 0xC2 and _other_space(data, p):
                    return -1, -1
                p += 1
    return tokens, lines + (n > 0 and data[n - 1] != 10)


@njit(nogil=True, cache=True, inline="always")
def _grown(a, need):
    """`a`, or a copy twice as long (and at least `need`) with its entries kept."""
    if need <= len(a):
        return a
    out = np.empty(max(need, 2 * len(a)), a.dtype)
    out[:len(a)] = a
    return out


@njit(nogil=True, cache=True)
def _encode(data, ws, n_tokens, n_lines, first_id):
    """Ids (T,) int32 of the tokens (a word's id = first_id + the order of its first
    sight), the lines' offsets into them (n_lines + 1,) int64, and the words' bytes one after
    the other (uint8) with their ends (W,) int64. Open addressing on an FNV-1a hash of the bytes,
    doubled at half load; a word is compared with its copy in the (small, cached) word
    bytes, not in the text. O(bytes) time, O(T + W) memory."""
    ids = np.empty(n_tokens, np.int32)
    offsets = np.zeros(n_lines + 1, np.int64)  # tokens per line, summed at the end
    size = 1 << 16
    table = np.full(size, -1, np.int64)
    chars = np.empty(1 << 16, np.uint8)
    ends = np.zeros(1025, np.int64)  # word k: chars[ends[k]:ends[k + 1]]
    hashes = np.empty(1024, np.uint64)
    nw, t, line, p, n = 0, 0, 0, 0, len(data)
    while p < n:
        b = data[p]
        if b == 10:
            line += 1
        if ws[b]:
            p += 1
            continue
        q, h = p, np.uint64(14695981039346656037)
        while q < n and not ws[data[q]]:
            h = (h ^ np.uint64(data[q])) * np.uint64(1099511628211)
            q += 1
        slot = h & np.uint64(size - 1)
        while True:
            k = table[slot]
            if k < 0:
                k = nw
                e = ends[k]
                chars = _grown(chars, e + q - p)
                chars[e:e + q - p] = data[p:q]
                ends = _grown(ends, k + 2)
                hashes = _grown(hashes, k + 1)
                ends[k + 1], hashes[k] = e + q - p, h
                table[slot] = k
                nw += 1
                break
            if hashes[k] == h and ends[k + 1] - ends[k] == q - p and \
                    _same(chars, ends[k], data, p, q - p):
                break
            slot = (slot + np.uint64(1)) & np.uint64(size - 1)
        ids[t] = first_id + k
        offsets[line + 1] += 1
        t += 1
        p = q
        if 2 * nw > size:  # grow: every word re-inserted by its hash
            size *= 2
            table = np.full(size, -1, np.int64)
            for w in range(nw):
                s = hashes[w] & np.uint64(size - 1)
                while table[s] >= 0:
                    s = (s + np.uint64(1)) & np.uint64(size - 1)
                table[s] = w
    return ids, np.cumsum(offsets), chars[:ends[nw]], ends[:nw + 1]


@njit(nogil=True, cache=True, inline="always")
def _same(a, i, b, j, n):
    """a[i:i + n] == b[j:j + n], without a temporary array."""
    for x in range(n):
        if a[i + x] != b[j + x]:
            return False
    return True


def _valid_utf8(data: bytes) -> bool:
    """Whether `data` decodes as UTF-8 (checked 16 MiB at a time: no copy of the text)."""
    dec = codecs.getincrementaldecoder("utf-8")()
    try:
        for at in range(0, len(data), 1 << 24):
            dec.decode(data[at:at + (1 << 24)])
        dec.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def encode_bytes(data: bytes, first_id: int = len(WordIds.RESERVED)):
    """(flat ids (T,) int32, offsets (N + 1,) int64, words) of the lines of valid UTF-8 text
    `data` (a BOM stripped) as `str.split()` tokens: word k (in order of first sight) is `words[k]`
    with id first_id + k; None where the bytes must go through the Python reader (module
    doc)."""
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    buf = np.frombuffer(data, np.uint8)
    n_tokens, n_lines = _count(buf, _WS)
    if n_lines <= 0:
        return None
    ids, off, chars, ends = _encode(buf, _WS, n_tokens, n_lines, first_id)
    chars, ends = chars.tobytes(), ends.tolist()
    return ids, off, [chars[a:b].decode("utf-8") for a, b in zip(ends, ends[1:])]


def _read_plain(path: str) -> bytes | None:
    """The bytes of a plain (uncompressed, regular) file of valid UTF-8, else None."""
    if not is_plain_file(path):
        return None
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return data if _valid_utf8(data) else None


class ParallelFiles:
    """The sentence pairs of two parallel files: iterating gives `pairs` (the Python
    reader's token pairs, with its checks), `encode` the same text as ids without it.
    `read_phase()`: a context that charges the file reads (e.g. `Phases("read")`)."""

    def __init__(self, pairs: Iterable, source: str, target: str,
                 read_phase: Callable | None = None):
        self.pairs, self.paths = pairs, (str(source), str(target))
        self.read_phase = read_phase or contextlib.nullcontext

    def __iter__(self):
        return iter(self.pairs)

    def encode(self, vocabs: tuple[WordIds, WordIds]):
        """((src ids, src offsets), (tgt ids, tgt offsets)) as `build_index` encodes the
        pairs into the fresh `vocabs` (their words added), or None (then iterate; `vocabs`
        untouched). O(bytes) compiled time; memory the files' bytes + 4 bytes a token."""
        fresh = len(WordIds.RESERVED)
        if any(len(v) != fresh or v.frozen for v in vocabs):
            return None
        with self.read_phase():
            data = [_read_plain(p) for p in self.paths]
        if any(d is None for d in data):
            return None
        with ThreadPoolExecutor(max_workers=2) as pool:  # (the kernels release the GIL)
            out = list(pool.map(encode_bytes, data))
        if any(x is None for x in out) or len(out[0][1]) != len(out[1][1]):
            return None
        for (_, _, words), v in zip(out, vocabs, strict=True):
            for w in words:
                v.add(w)
        return tuple((ids, off) for ids, off, _ in out)
