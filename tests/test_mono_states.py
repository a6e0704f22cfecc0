"""State linearisation of the phrasal aligner (Yao et al. 2013, 3.2): round trips."""

import pytest

from aligners.models.mono.states import num_states, state_id, state_phrase, state_table


@pytest.mark.parametrize("J,Lt", [(1, 1), (5, 1), (5, 2), (7, 3), (2, 4)])
def test_round_trip_and_density(J, Lt):
    C = num_states(tgt_len=J, max_tgt_len=Lt)
    assert C == 1 + J * Lt  # the paper's "from 1 + N to 1 + Lt N"
    seen = {state_id(end=0, length=0, tgt_len=J, max_tgt_len=Lt)}
    for end in range(1, J + 1):
        for length in range(1, Lt + 1):
            c = state_id(end=end, length=length, tgt_len=J, max_tgt_len=Lt)
            assert state_phrase(c, tgt_len=J, max_tgt_len=Lt) == (end, length)
            seen.add(c)
    assert seen == set(range(C))  # a bijection onto 0..C-1
    for c in range(C):
        end, length = state_phrase(c, tgt_len=J, max_tgt_len=Lt)
        assert state_id(end=end, length=length, tgt_len=J, max_tgt_len=Lt) == c


def test_paper_example_token_states_keep_their_position():
    # token states are the 1-based target positions, NULL is 0 (Figure 1)
    assert state_id(end=4, length=1, tgt_len=5, max_tgt_len=2) == 4
    # "closed down" = phrase (5, 2): the first phrasal id after the J token states + 4 blocks
    assert state_id(end=5, length=2, tgt_len=5, max_tgt_len=2) == 5 + 4 * 1 + 1


def test_table_validity_and_errors():
    st = state_table(tgt_len=3, max_tgt_len=3)
    for c in range(10):
        end, length = state_phrase(c, tgt_len=3, max_tgt_len=3)
        assert int(st["length"][c]) == length
        assert bool(st["valid"][c]) == (length == 0 or end - length >= 0)
        if length:
            assert int(st["start"][c]) == end - length and int(st["end0"][c]) == end - 1
    with pytest.raises(ValueError):
        state_phrase(10, tgt_len=3, max_tgt_len=3)
    with pytest.raises(ValueError):
        state_id(end=4, length=1, tgt_len=3, max_tgt_len=3)
