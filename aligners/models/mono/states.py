"""State linearisation of the phrasal CRF aligner (Yao et al. 2013, section 3.2).

A target state is NULL or a target phrase (p, l): 1-based END position p in 1..J, length l in
1..Lt (tokens p-l+1..p, "looking backward" as in the paper). The paper's map
`id = p (l = 1), J + (p-1)*Lt + l (l > 1)` leaves the ids J + (p-1)*Lt + 1 unused; we use its
dense form `id = p (l = 1), J + (p-1)*(Lt-1) + (l-1) (l > 1)`, id 0 = NULL, so there are exactly
C = 1 + J*Lt states as the paper states ("from 1+N to 1+Lt*N"). Ids whose phrase would start
before token 1 exist (to keep the map closed-form) but are invalid.
"""

from functools import lru_cache

import torch

__all__ = ["num_states", "state_id", "state_phrase", "state_table"]


def num_states(*, tgt_len: int, max_tgt_len: int) -> int:
    """C = 1 + J * Lt."""
    return 1 + tgt_len * max_tgt_len


def state_id(*, end: int, length: int, tgt_len: int, max_tgt_len: int) -> int:
    """State id of target phrase ending at 1-based `end` with `length` tokens (0 = NULL)."""
    if length == 0:
        return 0
    if not (1 <= end <= tgt_len and 1 <= length <= max_tgt_len):
        raise ValueError(f"no state for end={end}, length={length} (J={tgt_len}, Lt={max_tgt_len})")
    if length == 1:
        return end
    return tgt_len + (end - 1) * (max_tgt_len - 1) + (length - 1)


def state_phrase(state: int, *, tgt_len: int, max_tgt_len: int) -> tuple[int, int]:
    """Inverse of `state_id`: (1-based end, length); (0, 0) for NULL."""
    if not 0 <= state < num_states(tgt_len=tgt_len, max_tgt_len=max_tgt_len):
        raise ValueError(f"state {state} out of range for J={tgt_len}, Lt={max_tgt_len}")
    if state == 0:
        return (0, 0)
    if state <= tgt_len:
        return (state, 1)
    r = state - tgt_len - 1
    return (r // (max_tgt_len - 1) + 1, r % (max_tgt_len - 1) + 2)


@lru_cache(maxsize=4096)
def state_table(*, tgt_len: int, max_tgt_len: int) -> dict[str, torch.Tensor]:
    """Per-state tensors, each (C,): `start` (0-based first target token, -1 for NULL),
    `length` (0 for NULL), `end0` (0-based last token), `valid` (phrase inside the sentence).
    Memoised: treat the returned tensors as read-only."""
    C = num_states(tgt_len=tgt_len, max_tgt_len=max_tgt_len)
    ends, lens = zip(*(state_phrase(c, tgt_len=tgt_len, max_tgt_len=max_tgt_len)
                       for c in range(C)), strict=True)
    end = torch.tensor(ends)
    length = torch.tensor(lens)
    start = torch.where(length > 0, end - length, torch.full_like(end, -1))
    valid = (length == 0) | (start >= 0)
    return {"start": start, "length": length, "end0": end - 1, "valid": valid}
