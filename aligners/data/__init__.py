"""Readers, writers, the one bitext path and the dataset registry, each imported from its
module; here (no torch) only the batch budgets and the too-long rule every word family shares.
"""

import sys

# padded source x target cells per batch of the bitext path (`aligners.data.bitext`); kept
# here, free of torch, so that the CLI's argument parser can show it
DEFAULT_CELLS = 1_000_000
# the same on a GPU, where each batch costs a fixed ~2,000 kernel launches: fewer, larger batches
GPU_CELLS = 16_000_000


# longer sentences are left unaligned by every word family (one pair costs O(L^2) memory)
MAX_TOKENS = 2048


def too_long_left_out(pairs, *, max_tokens: int = MAX_TOKENS):
    """`pairs` (source tokens, target tokens), each with more than `max_tokens` tokens on a
    side replaced by an empty pair (left unaligned: an empty output line, the line count
    kept) and named in a one-line warning on stderr, as the pair index does. O(1) memory."""
    for r, (s, t) in enumerate(pairs):
        if len(s) > max_tokens or len(t) > max_tokens:
            warn_too_long(r, len(s), len(t), max_tokens=max_tokens)
            s, t = [], []
        yield s, t


def warn_too_long(row: int, n_src: int, n_tgt: int, *, max_tokens: int = MAX_TOKENS) -> None:
    """The one-line stderr warning for pair `row` (0-based) left unaligned as too long."""
    sys.stderr.write(f"aligners: warning: line {row + 1}: {n_src} x {n_tgt} tokens, over the "
                     f"{max_tokens}-token limit: left unaligned\n")


def default_cells(device: str) -> int:
    """The default batch budget on `device` ("cpu", "cuda", "cuda:1", ...)."""
    return DEFAULT_CELLS if str(device).split(":")[0] == "cpu" else GPU_CELLS


__all__ = ["DEFAULT_CELLS", "GPU_CELLS", "MAX_TOKENS", "too_long_left_out", "warn_too_long",
           "default_cells"]
