"""Pharaoh lines of many sentences at once: links `i-j` (or `i-j:p`) sorted per sentence.

Input: counts (B,) links per sentence and the links of all B sentences one after another,
i, j (K,) int64 (0-based; already in output order), optionally p (K,) posteriors.
Without posteriors the digits are written by one compiled pass into one byte buffer that is
decoded and split once (no Python object per link); with them each link is formatted in C
by `str.format` (`:.6g`, as `aligners.data.pharaoh` writes posteriors), one join per line.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["link_lines"]


@njit(cache=True)
def _digits(buf, p, x):
    """Write the decimal digits of x >= 0 at buf[p:]; return the position after them."""
    n = 1
    y = x
    while y >= 10:
        y //= 10
        n += 1
    for q in range(n - 1, -1, -1):
        buf[p + q] = 48 + x % 10
        x //= 10
    return p + n


@njit(cache=True)
def _lines(counts, i, j, width):
    """ASCII bytes of B lines (each ended by a newline): links `i-j` separated by spaces;
    no i or j has more than `width` digits."""
    buf = np.empty(len(counts) + len(i) * (2 * width + 2), np.uint8)  # at most
    p = 0
    k = 0
    for b in range(len(counts)):
        for q in range(counts[b]):
            if q:
                buf[p] = 32
                p += 1
            p = _digits(buf, p, i[k])
            buf[p] = 45
            p = _digits(buf, p + 1, j[k])
            k += 1
        buf[p] = 10
        p += 1
    return buf[:p]


def link_lines(counts: np.ndarray, i: np.ndarray, j: np.ndarray,
               p: np.ndarray | None = None) -> list[str]:
    """B Pharaoh lines: line b holds the next counts[b] links `i-j` (`i-j:p` with `p`).
    Shapes: counts (B,), i, j, p (K,) with K = counts.sum(). Cost O(K) (in C)."""
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    if p is None:
        width = len(str(max(int(i.max()), int(j.max())))) if len(i) else 1
        text = _lines(counts, np.ascontiguousarray(i, dtype=np.int64),
                      np.ascontiguousarray(j, dtype=np.int64), width).tobytes().decode("ascii")
        return text.split("\n")[:-1]
    tokens = list(map("{}-{}:{:.6g}".format, i.tolist(), j.tolist(), p.tolist()))
    ends = np.cumsum(counts).tolist()
    return [" ".join(tokens[a:b]) for a, b in zip([0, *ends[:-1]], ends, strict=True)]
