"""Give freed C-heap pages back to the OS while building large corpora (torch-free leaf)."""

from __future__ import annotations

import ctypes
import ctypes.util

__all__ = ["release_free_heap"]


def release_free_heap() -> bool:
    """Return the C heap's free pages to the OS (glibc `malloc_trim`); False where unavailable.

    Encoding a bitext interleaves many short-lived per-sentence arrays with the kept ones;
    glibc keeps the freed pages resident (a fragmented heap), which is a large share of peak
    RSS on big corpora. Cost O(heap size) per call.
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.malloc_trim(0))
    except (OSError, AttributeError):
        return False
