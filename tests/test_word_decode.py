"""Batched decoding (`aligners.models.hmm.decode`): the lines and link lists equal a plain
per-sentence oracle (the model's posteriors / Viterbi read cell by cell, links sorted,
formatted with f-strings), for every method, heuristic and with or without posteriors."""

import numpy as np
import pytest
import torch
from word_toy import toy_corpus

from aligners.data.bitext import build_index
from aligners.data.vocab import WordIds
from aligners.models.hmm._pharaoh_kernel import link_lines
from aligners.models.hmm.agreement import WordAlignConfig, WordAligner
from aligners.models.hmm.decode import decode_lines
from aligners.symmetrize import symmetrize

METHODS = {"agreement": 0.3, "posterior": 0.4, "viterbi": 0.3}


@pytest.fixture(scope="module")
def trained():
    src, tgt = toy_corpus(90, seed=5)
    # sentences of up to ~25 words (two-digit positions), and empty sides
    src = [src[k] + src[k + 1] + src[k + 2] if k % 3 == 0 else src[k] for k in range(80)]
    tgt = [tgt[k] + tgt[k + 1] + tgt[k + 2] if k % 3 == 0 else tgt[k] for k in range(80)]
    src[5], tgt[9] = [], []
    index = build_index(zip(src, tgt, strict=True), WordIds(), WordIds(), cells=300)
    model = WordAligner.from_index(index, WordAlignConfig(ibm1_iterations=2, hmm_iterations=2))
    model.fit(index)
    return model, index


def _oracle(model, index, method, threshold):
    """Per sentence: sorted forward / reverse links and their posterior dicts."""
    N = index.n_sentences
    out = [[[] for _ in range(N)] for _ in range(2)]
    posts = [[{} for _ in range(N)] for _ in range(2)]
    with torch.no_grad():
        for batch in index:
            post = model.posteriors(batch)
            vit = model.viterbi(batch) if method == "viterbi" else None
            for b, r in enumerate(batch.rows.tolist()):
                I, J = int(batch.src_lengths[b]), int(batch.tgt_lengths[b])
                for d, table in enumerate((post.links_fwd[b], post.links_bwd[b])):
                    if method == "agreement":
                        table = post.links_fwd[b] * post.links_bwd[b]
                    if method == "viterbi":
                        links = ([(int(vit[0][b, j]), j) for j in range(J) if vit[0][b, j] >= 0]
                                 if d == 0 else
                                 [(i, int(vit[1][b, i])) for i in range(I) if vit[1][b, i] >= 0])
                    else:
                        links = [(i, j) for i in range(I) for j in range(J)
                                 if table[i, j] > threshold]
                    out[d][r] = sorted(links)
                    posts[d][r] = {(i, j): float(table[i, j]) for i, j in links}
    return out, posts


def _fmt(links, posts):
    return " ".join(f"{i}-{j}:{posts[(i, j)]:.6g}" if (i, j) in posts else f"{i}-{j}"
                    for i, j in links)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_decode_lines_equal_the_per_sentence_oracle(trained, method):
    model, index = trained
    thr = METHODS[method]
    (lf, lr), (pf, pr) = _oracle(model, index, method, thr)
    assert sum(map(len, lf)) > 150 and max(i for x in lf for i, _ in x) >= 10
    assert lf[5] == lf[9] == []
    for with_posts in (False, True):
        P = (pf, pr) if with_posts else None  # the float32 values, 6 digits
        for heuristic in ("none", "grow-diag-final-and", "intersect"):
            lines = decode_lines(model, index, method=method, threshold=thr,
                                 heuristic=heuristic, posteriors=with_posts)
            for name, links, k in (("fwd", lf, 0), ("rev", lr, 1)):
                assert lines[name] == [_fmt(x, P[k][n] if P else {})
                                       for n, x in enumerate(links)], name
            sym = [lf[n] if heuristic == "none" else
                   sorted(symmetrize(lf[n], lr[n], heuristic)) for n in range(len(lf))]
            merged = [({**P[1][n], **P[0][n]} if heuristic != "none" else P[0][n])
                      if P else {} for n in range(len(lf))]
            assert lines["sym"] == [_fmt(x, m) for x, m in zip(sym, merged, strict=True)]


def test_link_lines_digits_empty_lines_and_posteriors():
    counts = np.array([0, 3, 0, 1, 2])
    i = np.array([0, 9, 10, 2047, 99, 100])
    j = np.array([1, 10, 9, 0, 100, 99])
    assert link_lines(counts, i, j) == ["", "0-1 9-10 10-9", "", "2047-0", "99-100 100-99"]
    p = np.array([0.5, 1e-7, 0.123456789, 1.0, 0.3, 0.25], dtype=np.float32)
    got = link_lines(counts, i, j, p)
    assert got[1] == f"0-1:0.5 9-10:{float(p[1]):.6g} 10-9:{float(p[2]):.6g}"
    assert got[3] == "2047-0:1" and got[0] == got[2] == ""
    assert link_lines(np.zeros(0, np.int64), i[:0], j[:0]) == []
