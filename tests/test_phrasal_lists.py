"""Phrase-list construction (Bansal et al. 2011, sec. 5): the ranking rules and the mined
lists of `mine_phrase_lists` against a plain-Python recount of the same Viterbi links."""

import numpy as np
import pytest
import torch

from aligners.data.bitext import build_index
from aligners.data.vocab import WordIds
from aligners.models.gappy_hsmm.config import PhrasalConfig
from aligners.models.gappy_hsmm.mining import mine_phrase_lists
from aligners.models.gappy_hsmm.phrase_lists import RANK_RULES, rank_phrases


def _ranked(aligned: dict, total: dict, **kw) -> list:
    """`rank_phrases` of one-word phrases named by letters (the letter order: the phrase's)."""
    names = sorted(aligned)
    rows = torch.tensor([[ord(x)] for x in names])
    top = rank_phrases(rows, [aligned[x] for x in names], [total[x] for x in names], **kw)
    return [chr(x) for x in top[:, 0].tolist()]


def test_rank_rules_min_count_and_ties():
    aligned = {"a": 10, "b": 3, "c": 1, "d": 40, "e": 3}
    total = {"a": 20, "b": 3, "c": 1, "d": 100, "e": 3}
    # the paper's discounted probability: b, e 2.5/3 > c 0.5/1 > a 9.5/20 > d 39.5/100
    assert _ranked(aligned, total, top=5, discount=0.5) == ["b", "e", "c", "a", "d"]
    # a minimum occurrence count removes the rare ones before ranking
    assert _ranked(aligned, total, top=5, discount=0.5, min_count=5) == ["a", "d"]
    # by discounted aligned count; ties (b, e) by probability, then the phrase
    assert _ranked(aligned, total, top=3, discount=0.5, rule="count") == ["d", "a", "b"]
    # aligned <= discount: never ranked
    assert _ranked(aligned, total, top=9, discount=3.0) == ["d", "a"]  # .37 > .35


def test_a_phrase_ranks_before_the_longer_ones_it_begins():
    rows = torch.tensor([[1, 2, 3], [1, 2, -1], [0, 5, -1]])
    top = rank_phrases(rows, [2, 2, 2], [4, 4, 4], top=3, discount=0.5)
    assert top.tolist() == [[0, 5, -1], [1, 2, -1], [1, 2, 3]]


def test_config_checks_the_new_options():
    assert PhrasalConfig().rank == "probability" and PhrasalConfig().min_count == 1
    for bad, word in (({"min_count": 0}, "min_count must be an integer >= 1"),
                      ({"gappy_min_count": 0}, "gappy_min_count must be an integer >= 1"),
                      ({"gappy_discount": -1.0}, "gappy_discount must be a number >= 0"),
                      ({"rank": "x"}, "rank must be one of probability, count"),
                      ({"gappy_rank": "x"}, "gappy_rank must be one of probability, count")):
        with pytest.raises(ValueError, match=f"^{word}"):
            PhrasalConfig(**bad)


def _reference(sentences, max_len):
    """Plain-Python counts of one language: [(words, alignment to state positions)] ->
    (contiguous aligned, contiguous total, gappy aligned, gappy total) per the paper's
    conditions, written independently of the vectorised miner."""
    ca, ct, ga, gt = {}, {}, {}, {}
    for w, a in sentences:
        n = len(w)
        for ln in range(2, max_len + 1):
            for s in range(n - ln + 1):
                ph = tuple(w[s:s + ln])
                ct[ph] = ct.get(ph, 0) + 1
                if a[s] >= 0 and all(x == a[s] for x in a[s:s + ln]):
                    ca[ph] = ca.get(ph, 0) + 1
        for i in range(n):
            for c in range(i + 2, n):
                ph = (w[i], w[c])
                gt[ph] = gt.get(ph, 0) + 1
                if (a[i] >= 0 and a[i] == a[c] and sum(x == a[i] for x in a) == 2
                        and any(x >= 0 for x in a[i + 1:c])):
                    ga[ph] = ga.get(ph, 0) + 1
    return ca, ct, ga, gt


def _expected(ca, ct, *, top, discount, min_count, rule):
    rows = []
    for ph, c in ca.items():
        if ct[ph] >= min_count and c > discount:
            p = (c - discount) / ct[ph]
            rows.append(((-p, -c) if rule == "probability" else (-(c - discount), -p), ph))
    return [ph for _, ph in sorted(rows)[:top]]


@pytest.mark.parametrize("opts", [
    {},  # the paper's rule as first built (discount 0.5, no minimum)
    {"min_count": 3, "gappy_min_count": 4},
    {"rank": "count", "gappy_discount": 2.0},
    {"gappy_rank": "count", "gappy_min_count": 2, "discount": 1.0},
])
def test_mined_lists_equal_a_plain_recount(opts):
    rng = np.random.default_rng(7)
    src, tgt = [], []
    for _ in range(200):
        src.append([f"e{k}" for k in rng.integers(0, 5, size=rng.integers(1, 8))])
        tgt.append([f"f{k}" for k in rng.integers(0, 5, size=rng.integers(1, 8))])
    si, ti = WordIds(), WordIds()
    index = build_index(zip(src, tgt), si, ti, cells=150)
    assert len(index) > 1
    g = torch.Generator().manual_seed(3)
    vit, by_side = [], {"src": [], "tgt": []}
    for k in range(len(index)):
        bt = index.batch(k)
        B, I = bt.src.shape
        J = bt.tgt.shape[1]
        # random Viterbi-like links: few distinct states so phrases and gaps occur often
        f = torch.randint(-1, 3, (B, J), generator=g).clamp(max=I - 1)
        b = torch.randint(-1, 3, (B, I), generator=g).clamp(max=J - 1)
        for r in range(B):  # states past a pair's length are NULL there
            I_r, J_r = int(bt.src_lengths[r]), int(bt.tgt_lengths[r])
            f[r] = torch.where(f[r] < I_r, f[r], -1)
            b[r] = torch.where(b[r] < J_r, b[r], -1)
            by_side["tgt"].append((bt.tgt[r, :J_r].tolist(), f[r, :J_r].tolist()))
            by_side["src"].append((bt.src[r, :I_r].tolist(), b[r, :I_r].tolist()))
        vit.append((f.int(), b.int()))
    cfg = PhrasalConfig(max_phrase_len=3, n_contiguous=6, n_gappy=4, **opts)
    lists = dict(zip(("src", "tgt"), mine_phrase_lists(index, vit, cfg)[:2]))
    for side, lst in lists.items():
        ca, ct, ga, gt = _reference(by_side[side], 3)
        want_c = _expected(ca, ct, top=6, discount=cfg.discount, min_count=cfg.min_count,
                           rule=cfg.rank)
        gd = cfg.discount if cfg.gappy_discount is None else cfg.gappy_discount
        want_g = _expected(ga, gt, top=4, discount=gd, min_count=cfg.gappy_min_count,
                           rule=cfg.gappy_rank or cfg.rank)
        got_c = [tuple(x for x in row if x >= 0) for row in lst.contiguous.tolist()]
        assert got_c == want_c, side
        assert [tuple(x) for x in lst.gappy.tolist()] == want_g, side
        assert len(want_c) == 6 and want_g, "the fixture must fill the lists"


def test_rank_rules_are_the_documented_ones():
    assert RANK_RULES == ("probability", "count")
