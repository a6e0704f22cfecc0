"""Phrasal/gappy HSMM alignment lattice: brute-force oracle, batched == one-by-one, gradcheck,
equality with the generic HSMM lattice on materialised potentials."""

import itertools
import math

import pytest
import torch

from aligners.errors import AlignersInputError
from aligners.lattices import phrasal_hsmm
from aligners.lattices.hsmm import hsmm_posteriors
from aligners.lattices.phrasal_hsmm import (
    PhrasalPotentials,
    phrasal_hsmm_log_partition,
    phrasal_hsmm_posteriors,
    phrasal_hsmm_viterbi,
)
from aligners.semirings import semiring_zero


def phrasal_hsmm_materialise(pot: PhrasalPotentials, *, src_lengths: torch.Tensor):
    """The same model on explicit states for `aligners.lattices.hsmm` (the oracle): C = 2I + P
    states (words, NULLs, phrases) -> (log_init (B,C), log_trans (B,C,C), log_seg_emit
    (B,J,L,C), state_mask (B,C))."""
    ew = pot.log_emit_word
    B, J, L, I = ew.shape
    P = pot.log_emit_phrase.shape[-1]
    dtype, dev = ew.dtype, ew.device
    zero = semiring_zero(dtype)
    sl = src_lengths.to(dev).long()
    ivalid = torch.arange(I, device=dev)[None, :] < sl[:, None]
    pfirst, plast = pot.phrase_first.long(), pot.phrase_last.long()
    pvalid = (pfirst >= 0) & (plast < sl[:, None]) & (pfirst <= plast)
    first, last = pfirst.clamp(0, I - 1), plast.clamp(0, I - 1)
    bidx = torch.arange(B, device=dev)[:, None]
    init = torch.cat([pot.log_jump_init, pot.log_null_init,
                      pot.log_jump_init.gather(1, first) + pot.log_phrase_weight], 1)
    # rows: the last position of each state
    lasts = torch.cat([torch.arange(I, device=dev).expand(B, I),
                       torch.arange(I, device=dev).expand(B, I), last], 1)  # (B, C)
    jrows = pot.log_jump[bidx, lasts]  # (B, C, I)
    to_word = jrows
    eye = lasts[:, :, None] == torch.arange(I, device=dev)[None, None, :]
    to_null = torch.where(eye, pot.log_null_stay[:, None, :], torch.full((), zero, dtype=dtype,
                                                                             device=dev))
    to_phrase = jrows.gather(2, first[:, None, :].expand(B, 2 * I + P, P))
    to_phrase = to_phrase + pot.log_phrase_weight[:, None, :]
    trans = torch.cat([to_word, to_null, to_phrase], 2)
    seg = torch.full((B, J, L, 2 * I + P), zero, dtype=dtype, device=dev)
    seg[..., :I] = ew
    seg[:, :, 0, I:2 * I] = pot.log_emit_null[:, :, None]
    seg[:, :, 0, 2 * I:] = pot.log_emit_phrase
    mask = torch.cat([ivalid, ivalid, pvalid], 1)
    return init, trans, seg, mask


def _random(B, I, J, L, phrases, *, seed=0, dtype=torch.float64):
    """Random potentials; `phrases` = list of (first, last) per item (same count P)."""
    g = torch.Generator().manual_seed(seed)
    P = len(phrases[0]) if phrases else 0

    def r(*shape):
        return torch.randn(*shape, generator=g, dtype=dtype)

    first = torch.tensor([[f for f, _ in ph] for ph in phrases], dtype=torch.long).view(B, P)
    last = torch.tensor([[la for _, la in ph] for ph in phrases], dtype=torch.long).view(B, P)
    return PhrasalPotentials(r(B, J, L, I), r(B, J), r(B, J, P), r(B, I), r(B, I, I), r(B, I),
                             r(B, I), r(B, P), first, last)


def _states(pot, b, I):
    """(kind, index, first, last) of every state of item b."""
    out = [("w", i, i, i) for i in range(I)] + [("n", r, r, r) for r in range(I)]
    for p in range(pot.phrase_first.shape[1]):
        f, la = int(pot.phrase_first[b, p]), int(pot.phrase_last[b, p])
        if 0 <= f <= la < I:
            out.append(("p", p, f, la))
    return out


def _segmentations(J, L):
    if J == 0:
        yield []
        return
    for k in range(1, min(L, J) + 1):
        for rest in _segmentations(J - k, L):
            yield [k, *rest]


def _brute(pot, b, I, J):
    """Every (segmentation, state sequence) of item b with its score, from the definition."""
    L = pot.log_emit_word.shape[2]
    states = _states(pot, b, I)
    out = []
    for seg in _segmentations(J, L):
        ends = list(itertools.accumulate(seg))
        for seq in itertools.product(states, repeat=len(seg)):
            s, prev, ok = 0.0, None, True
            for (kind, idx, first, last), ln, end in zip(seq, seg, ends):
                n = end - 1
                if kind != "w" and ln != 1:
                    ok = False
                    break
                if prev is None:
                    init = pot.log_null_init[b, idx] if kind == "n" else pot.log_jump_init[b, first]
                    s += float(init)
                else:
                    if kind == "n":
                        if idx != prev:
                            ok = False
                            break
                        s += float(pot.log_null_stay[b, idx])
                    else:
                        s += float(pot.log_jump[b, prev, first])
                if kind == "p":
                    s += float(pot.log_phrase_weight[b, idx])
                    s += float(pot.log_emit_phrase[b, n, idx])
                elif kind == "n":
                    s += float(pot.log_emit_null[b, n])
                else:
                    s += float(pot.log_emit_word[b, n, ln - 1, idx])
                prev = last
            if ok:
                out.append((s, [(k, i, ln, e - 1) for (k, i, _, _), ln, e in zip(seq, seg, ends)]))
    return out


@pytest.mark.parametrize("I,J,phr", [(2, 3, [(0, 1)]), (3, 3, [(0, 2), (1, 2)]),
                                     (3, 4, [(0, 2), (0, 1)]), (1, 3, [(0, 0)])])
def test_brute_force_partition_marginals_viterbi(I, J, phr):
    L = 3
    pot = _random(1, I, J, L, [phr], seed=I * 10 + J)
    sl, tl = torch.tensor([I]), torch.tensor([J])
    paths = _brute(pot, 0, I, J)
    scores = torch.tensor([s for s, _ in paths], dtype=torch.float64)
    logz = torch.logsumexp(scores, 0)
    assert torch.allclose(phrasal_hsmm_log_partition(pot, src_lengths=sl, tgt_lengths=tl)[0], logz)
    post = phrasal_hsmm_posteriors(pot, src_lengths=sl, tgt_lengths=tl)
    word = torch.zeros_like(post.word)
    null = torch.zeros_like(post.null)
    phrase = torch.zeros_like(post.phrase)
    probs = torch.exp(scores - logz)
    for p, (_, segs) in zip(probs, paths):
        for kind, idx, ln, n in segs:
            if kind == "w":
                word[0, n, ln - 1, idx] += p
            elif kind == "n":
                null[0, n] += p
            else:
                phrase[0, n, idx] += p
    assert torch.allclose(post.word, word, atol=1e-10)
    assert torch.allclose(post.null, null, atol=1e-10)
    assert torch.allclose(post.phrase, phrase, atol=1e-10)
    best = int(scores.argmax())
    vit = phrasal_hsmm_viterbi(pot, src_lengths=sl, tgt_lengths=tl)
    assert math.isclose(float(vit.log_likelihood[0]), float(scores[best]), abs_tol=1e-10)
    for kind, idx, ln, n in paths[best][1]:
        if kind == "w":
            t = vit.word[0, n, ln - 1, idx]
        else:
            t = vit.null[0, n] if kind == "n" else vit.phrase[0, n, idx]
        assert float(t) == pytest.approx(1.0)
    total = vit.word.sum() + vit.null.sum() + vit.phrase.sum()
    assert float(total) == pytest.approx(len(paths[best][1]))


def test_gappy_state_gets_mass_only_where_reachable():
    # phrase (0, 2) is gappy (skips 1): every path through it jumps out of position 2
    pot = _random(1, 3, 3, 2, [[(0, 2)]], seed=3)
    post = phrasal_hsmm_posteriors(pot, src_lengths=torch.tensor([3]),
                                   tgt_lengths=torch.tensor([3]))
    assert float(post.phrase.sum()) > 0
    pot2 = pot._replace(phrase_first=torch.tensor([[-1]]))  # padding phrase: never used
    post2 = phrasal_hsmm_posteriors(pot2, src_lengths=torch.tensor([3]),
                                    tgt_lengths=torch.tensor([3]))
    assert float(post2.phrase.abs().sum()) == 0.0


def _one(pot, b, I, J, P):
    f = pot.phrase_first[b:b + 1, :P]
    return PhrasalPotentials(
        pot.log_emit_word[b:b + 1, :J, :, :I], pot.log_emit_null[b:b + 1, :J],
        pot.log_emit_phrase[b:b + 1, :J, :P], pot.log_jump_init[b:b + 1, :I],
        pot.log_jump[b:b + 1, :I, :I], pot.log_null_init[b:b + 1, :I],
        pot.log_null_stay[b:b + 1, :I], pot.log_phrase_weight[b:b + 1, :P], f,
        pot.phrase_last[b:b + 1, :P])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_batched_equals_one_by_one(dtype):
    g = torch.Generator().manual_seed(7)
    B, I, J, L = 5, 6, 7, 3
    sl = torch.randint(1, I + 1, (B,), generator=g)
    tl = torch.randint(1, J + 1, (B,), generator=g)
    phrases = []
    for b in range(B):
        n = int(sl[b])
        ph = [(0, min(1, n - 1)), (0, n - 1), (-1, -1)]
        phrases.append(ph)
    pot = _random(B, I, J, L, phrases, seed=11, dtype=dtype)
    post = phrasal_hsmm_posteriors(pot, src_lengths=sl, tgt_lengths=tl)
    vit = phrasal_hsmm_viterbi(pot, src_lengths=sl, tgt_lengths=tl)
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    for b in range(B):
        i, j = int(sl[b]), int(tl[b])
        one = _one(pot, b, i, j, 3)
        p1 = phrasal_hsmm_posteriors(one, src_lengths=sl[b:b + 1], tgt_lengths=tl[b:b + 1])
        assert torch.allclose(post.log_likelihood[b], p1.log_likelihood[0], atol=tol)
        assert torch.allclose(post.word[b, :j, :, :i], p1.word[0], atol=tol)
        assert float(post.word[b, j:].abs().sum() + post.word[b, :, :, i:].abs().sum()) < tol
        assert torch.allclose(post.null[b, :j], p1.null[0], atol=tol)
        assert torch.allclose(post.phrase[b, :j], p1.phrase[0], atol=tol)
        v1 = phrasal_hsmm_viterbi(one, src_lengths=sl[b:b + 1], tgt_lengths=tl[b:b + 1])
        assert torch.allclose(vit.log_likelihood[b], v1.log_likelihood[0], atol=tol)
        assert torch.equal(vit.word[b, :j, :, :i], v1.word[0])
        # marginals of the covered target words sum to one
        cover = post.null[b, :j] + post.phrase[b, :j].sum(-1)
        for ln in range(L):
            for n in range(j):
                lo = max(0, n - ln)
                cover[lo:n + 1] += post.word[b, n, ln, :i].sum() * (n - ln >= 0)
        assert torch.allclose(cover, torch.ones(j, dtype=dtype), atol=1e-3)


def test_equals_generic_hsmm_on_materialised_potentials():
    B, I, J, L = 3, 4, 5, 3
    sl, tl = torch.tensor([4, 2, 3]), torch.tensor([5, 3, 4])
    phrases = [[(0, 1), (1, 3)], [(0, 1), (-1, -1)], [(0, 2), (1, 2)]]
    pot = _random(B, I, J, L, phrases, seed=5)
    post = phrasal_hsmm_posteriors(pot, src_lengths=sl, tgt_lengths=tl)
    init, trans, seg, mask = phrasal_hsmm_materialise(pot, src_lengths=sl)
    ref = hsmm_posteriors(init, trans, seg, lengths=tl, state_mask=mask)
    assert torch.allclose(post.log_likelihood, ref.log_likelihood, atol=1e-8)
    sp = ref.segment_posteriors
    assert torch.allclose(post.word, sp[..., :I], atol=1e-8)
    assert torch.allclose(post.null, sp[:, :, 0, I:2 * I].sum(-1), atol=1e-8)
    assert torch.allclose(post.phrase, sp[:, :, 0, 2 * I:], atol=1e-8)


@pytest.mark.parametrize("scale", [1.0, 30.0])
def test_scaled_forward_equals_generic_hsmm(scale):
    # the reference: the generic HSMM lattice (tested against a plain log-space forward)
    from aligners.lattices.hsmm import hsmm_log_likelihood

    B, I, J, L = 4, 5, 9, 4
    sl, tl = torch.tensor([5, 3, 1, 4]), torch.tensor([9, 2, 5, 7])
    phrases = [[(0, 2), (1, 4)], [(0, 1), (-1, -1)], [(-1, -1), (-1, -1)], [(1, 3), (0, 3)]]
    pot = _random(B, I, J, L, phrases, seed=4)
    pot = PhrasalPotentials(*(x * scale for x in pot[:8]), *pot[8:])
    init, trans, seg, mask = phrasal_hsmm_materialise(pot, src_lengths=sl)
    ref = hsmm_log_likelihood(init, trans, seg, lengths=tl, state_mask=mask)
    got = phrasal_hsmm_log_partition(pot, src_lengths=sl, tgt_lengths=tl)
    assert torch.allclose(got, ref, rtol=1e-9, atol=1e-8)
    one = PhrasalPotentials(*(x.float() for x in pot[:8]), *pot[8:])
    got32 = phrasal_hsmm_log_partition(one, src_lengths=sl, tgt_lengths=tl)
    # float32 keeps relative masses down to e^-87 within one position / one jump row
    tol = 1e-3 if scale == 1.0 else 1.0
    assert torch.allclose(got32.double(), ref, rtol=1e-5, atol=tol)


def test_sparse_segments_equal_generic_hsmm():
    # the model scores multi-word segments only at a few (position, length): those are skipped
    from aligners.semirings import semiring_zero

    B, I, J, L = 2, 4, 6, 3
    sl, tl = torch.tensor([4, 3]), torch.tensor([6, 5])
    pot = _random(B, I, J, L, [[(0, 2)], [(1, 2)]], seed=8)
    ew = torch.full_like(pot.log_emit_word, semiring_zero(torch.float64))
    ew[:, :, 0] = pot.log_emit_word[:, :, 0]
    ew[0, 3, 1] = pot.log_emit_word[0, 3, 1]
    ew[1, 4, 2, 1] = 0.5
    pot = pot._replace(log_emit_word=ew)
    for vit in (False, True):
        fn = phrasal_hsmm_viterbi if vit else phrasal_hsmm_posteriors
        post = fn(pot, src_lengths=sl, tgt_lengths=tl)
        init, trans, seg, mask = phrasal_hsmm_materialise(pot, src_lengths=sl)
        if vit:
            from aligners.lattices.hsmm import hsmm_viterbi

            ref = hsmm_viterbi(init, trans, seg, lengths=tl, state_mask=mask)
            assert torch.allclose(post.log_likelihood, ref.score, atol=1e-8)
        else:
            ref = hsmm_posteriors(init, trans, seg, lengths=tl, state_mask=mask)
            assert torch.allclose(post.log_likelihood, ref.log_likelihood, atol=1e-8)
            assert torch.allclose(post.word, ref.segment_posteriors[..., :I], atol=1e-8)
    assert float(post.word[0, 3, 1].sum() + post.word[1, 4, 2].sum()) >= 0


def test_gradcheck_float64():
    pot = _random(2, 3, 3, 2, [[(0, 2)], [(0, 1)]], seed=9)
    sl, tl = torch.tensor([3, 2]), torch.tensor([3, 2])
    leaves = [x.clone().requires_grad_(True) for x in pot[:8]]

    def f(*xs):
        return phrasal_hsmm_log_partition(PhrasalPotentials(*xs, *pot[8:]), src_lengths=sl,
                                          tgt_lengths=tl)

    assert torch.autograd.gradcheck(f, leaves, eps=1e-6, atol=1e-6)


def test_bad_input_is_a_clear_error():
    pot = _random(1, 2, 2, 2, [[(0, 1)]])
    with pytest.raises(AlignersInputError, match="lengths"):
        phrasal_hsmm_log_partition(pot, src_lengths=torch.tensor([3]),
                                   tgt_lengths=torch.tensor([2]))
    with pytest.raises(AlignersInputError, match="log_jump"):
        phrasal_hsmm_log_partition(pot._replace(log_jump=torch.zeros(1, 2, 3)),
                                   src_lengths=torch.tensor([2]), tgt_lengths=torch.tensor([2]))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cuda_matches_cpu():
    pot = _random(2, 4, 5, 3, [[(0, 2)], [(1, 3)]], seed=2, dtype=torch.float32)
    sl, tl = torch.tensor([4, 3]), torch.tensor([5, 4])
    cpu = phrasal_hsmm_posteriors(pot, src_lengths=sl, tgt_lengths=tl)
    gpu = phrasal_hsmm_posteriors(PhrasalPotentials(*(x.cuda() for x in pot)),
                                  src_lengths=sl.cuda(), tgt_lengths=tl.cuda())
    assert gpu.word.device.type == "cuda"
    assert torch.allclose(cpu.word, gpu.word.cpu(), atol=1e-4)
    assert torch.allclose(cpu.log_likelihood, gpu.log_likelihood.cpu(), atol=1e-4)


def _autograd_posteriors(pot, sl, tl):
    """The posteriors by autograd of the scaled forward (the non-CPU path), on CPU tensors."""
    return phrasal_hsmm._grad_marginals(pot, sl.long(), tl.long(), phrasal_hsmm._scaled_forward)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-10), (torch.float32, 2e-5)])
def test_explicit_posteriors_equal_autograd(dtype, tol):
    """The numba forward-backward (CPU default) against autograd of the scaled forward:
    mixed lengths, padded phrases, gappy phrases, segments scored only at some cells."""
    B, I, J, L = 5, 6, 11, 4
    sl, tl = torch.tensor([6, 3, 1, 5, 6]), torch.tensor([11, 2, 5, 9, 7])
    phrases = [[(0, 2), (1, 4), (3, 5)], [(0, 1), (-1, -1), (-1, -1)],
               [(-1, -1), (-1, -1), (-1, -1)], [(1, 3), (0, 3), (2, 4)],
               [(4, 5), (-1, -1), (-1, -1)]]
    pot = _random(B, I, J, L, phrases, seed=11, dtype=dtype)
    g = torch.Generator().manual_seed(3)
    keep = torch.rand(B, J, L, I, generator=g) < 0.2
    keep[:, :, 0] = True
    from aligners.semirings import semiring_zero

    zero = semiring_zero(dtype)
    pot = pot._replace(log_emit_word=torch.where(keep, pot.log_emit_word, zero))
    ex = phrasal_hsmm_posteriors(pot, src_lengths=sl, tgt_lengths=tl)
    ag = _autograd_posteriors(pot, sl, tl)
    for a, b in zip(ex, ag):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert torch.allclose(a, b, atol=tol, rtol=tol)
    assert float(ex.phrase.sum()) > 0.1 and float(ex.word[:, :, 1:].sum()) > 0.1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("ties", [False, True])
def test_numba_word_hmm_viterbi_equals_the_torch_viterbi(dtype, ties):
    """The numba Viterbi of the Och-Ney word HMM used by the phrasal mining pass gives the
    same states and scores as `alignment_hmm_viterbi`, bit for bit (ties: first maximum)."""
    from aligners.lattices._alignment_hmm_viterbi_kernel import alignment_hmm_viterbi_cpu
    from aligners.lattices.alignment_hmm import alignment_hmm_viterbi
    from aligners.semirings import log_or_zero

    g = torch.Generator().manual_seed(7)
    B, I, J = 40, 7, 9
    if ties:  # few distinct values: many exact ties between paths
        link = torch.randint(0, 3, (B, I, J), generator=g).to(dtype) / 4
        null = torch.randint(1, 3, (B, J), generator=g).to(dtype) / 4
        jumps = torch.randint(1, 3, (I + 1, I), generator=g).to(dtype)
    else:
        link = torch.rand(B, I, J, generator=g, dtype=dtype)
        null = torch.rand(B, J, generator=g, dtype=dtype)
        jumps = torch.rand(I + 1, I, generator=g, dtype=dtype)
    sl = torch.randint(1, I + 1, (B,), generator=g)
    tl = torch.randint(1, J + 1, (B,), generator=g)
    want = alignment_hmm_viterbi(link, null, jumps, src_lengths=sl, tgt_lengths=tl, p0=0.2)
    got = alignment_hmm_viterbi_cpu(link, null, jumps, src_lengths=sl, tgt_lengths=tl, p0=0.2)
    assert torch.equal(got.states, want.states)
    assert torch.equal(got.score, want.score)
    # the same from the word log potentials (B, J, I), as the mining pass gathers them
    logs = log_or_zero(link.transpose(1, 2)).contiguous()
    got = alignment_hmm_viterbi_cpu(None, null, jumps, src_lengths=sl, tgt_lengths=tl, p0=0.2,
                                    log_links=logs)
    assert torch.equal(got.states, want.states)
    assert torch.equal(got.score, want.score)
    with pytest.raises(ValueError, match="exactly one"):
        alignment_hmm_viterbi_cpu(link, null, jumps, src_lengths=sl, tgt_lengths=tl, p0=0.2,
                                  log_links=logs)
    with pytest.raises(ValueError, match="null_probs"):
        alignment_hmm_viterbi_cpu(None, null[:, :-1], jumps, src_lengths=sl, tgt_lengths=tl,
                                  p0=0.2, log_links=logs)


def _sparse_random(B, I, J, L, phrases, *, seed, dtype=torch.float64, keep=0.3):
    """Dense random potentials whose long segments are scored only at a few (end, length)
    per item (the model's case), and their sparse form."""
    from aligners.lattices.phrasal_hsmm_sparse import to_sparse
    from aligners.semirings import semiring_zero

    pot = _random(B, I, J, L, phrases, seed=seed, dtype=dtype)
    g = torch.Generator().manual_seed(seed + 1)
    listed = torch.rand(B, J, L, 1, generator=g) < keep
    listed[:, :, 0] = True
    ew = torch.where(listed, pot.log_emit_word, semiring_zero(dtype))
    pot = pot._replace(log_emit_word=ew)
    return pot, to_sparse(pot)


@pytest.mark.parametrize("I,J,phr", [(2, 3, [(0, 1)]), (3, 4, [(0, 2), (0, 1)]),
                                     (3, 4, [(0, 2), (2, 2)])])
def test_sparse_form_brute_force_and_viterbi(I, J, phr):
    """Sparse long segments: posteriors and Viterbi equal brute-force enumeration over the
    dense form with the unlisted segments at the semiring zero (gappy phrase included)."""
    from aligners.lattices.phrasal_hsmm_sparse import (
        phrasal_hsmm_sparse_posteriors,
        sparse_posteriors_to_dense,
    )

    L = 3
    pot, spot = _sparse_random(1, I, J, L, [phr], seed=I * 10 + J, keep=0.5)
    assert spot.seg_item.numel() > 0
    sl, tl = torch.tensor([I]), torch.tensor([J])
    paths = [p for p in _brute(pot, 0, I, J) if p[0] > -1e20]
    scores = torch.tensor([s for s, _ in paths], dtype=torch.float64)
    logz = torch.logsumexp(scores, 0)
    post = phrasal_hsmm_sparse_posteriors(spot, max_len=L, src_lengths=sl, tgt_lengths=tl)
    assert torch.allclose(post.log_likelihood[0], logz, atol=1e-10)
    dense = sparse_posteriors_to_dense(post, spot, L)
    word = torch.zeros_like(dense.word)
    for p, (_, segs) in zip(torch.exp(scores - logz), paths):
        for kind, idx, ln, n in segs:
            if kind == "w":
                word[0, n, ln - 1, idx] += p
    assert torch.allclose(dense.word, word, atol=1e-10)
    vit = phrasal_hsmm_sparse_posteriors(spot, max_len=L, src_lengths=sl, tgt_lengths=tl,
                                         viterbi=True)
    assert math.isclose(float(vit.log_likelihood[0]), float(scores.max()), abs_tol=1e-10)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sparse_form_equals_dense_and_batched_equals_one_by_one(dtype):
    from aligners.lattices.phrasal_hsmm_sparse import (
        phrasal_hsmm_sparse_posteriors,
        to_dense,
    )

    B, I, J, L = 6, 6, 9, 4
    g = torch.Generator().manual_seed(4)
    sl = torch.randint(1, I + 1, (B,), generator=g)
    tl = torch.randint(1, J + 1, (B,), generator=g)
    phrases = [[(0, min(2, int(n) - 1)), (-1, -1)] for n in sl]
    pot, spot = _sparse_random(B, I, J, L, phrases, seed=21, dtype=dtype)
    readable = (torch.arange(L)[None, :] <= torch.arange(J)[:, None])[None, :, :, None]
    assert torch.equal(torch.where(readable, to_dense(spot, L).log_emit_word, 0),
                       torch.where(readable, pot.log_emit_word, 0))  # l > n is never read
    sp = phrasal_hsmm_sparse_posteriors(spot, max_len=L, src_lengths=sl, tgt_lengths=tl)
    de = _autograd_posteriors(pot, sl, tl)
    tol = 2e-5 if dtype == torch.float32 else 1e-10
    assert torch.allclose(sp.log_likelihood, de.log_likelihood, atol=tol, rtol=tol)
    assert torch.allclose(sp.word, de.word[:, :, 0], atol=tol)
    assert torch.allclose(sp.seg, de.word[spot.seg_item, spot.seg_end, spot.seg_len], atol=tol)
    assert torch.allclose(sp.null, de.null, atol=tol) and torch.allclose(sp.phrase, de.phrase,
                                                                         atol=tol)
    assert float(sp.seg.sum()) > 0.1
    for b in range(B):  # one item at a time: the same numbers
        m = spot.seg_item == b
        one = spot._replace(log_emit_word=spot.log_emit_word[b:b + 1],
                            seg_item=spot.seg_item[m] * 0, seg_end=spot.seg_end[m],
                            seg_len=spot.seg_len[m], log_emit_seg=spot.log_emit_seg[m],
                            **{f: getattr(spot, f)[b:b + 1] for f in spot._fields[5:]})
        p1 = phrasal_hsmm_sparse_posteriors(one, max_len=L, src_lengths=sl[b:b + 1],
                                            tgt_lengths=tl[b:b + 1])
        assert torch.equal(p1.word[0], sp.word[b]) and torch.equal(p1.seg, sp.seg[m])
        assert torch.equal(p1.log_likelihood[0], sp.log_likelihood[b])


def test_sparse_form_bad_input_is_a_clear_error():
    from aligners.lattices.phrasal_hsmm_sparse import phrasal_hsmm_sparse_posteriors

    _, spot = _sparse_random(2, 3, 4, 3, [[(0, 1)], [(0, 2)]], seed=1, keep=1.0)
    sl, tl = torch.tensor([3, 3]), torch.tensor([4, 4])
    kw = dict(max_len=3, src_lengths=sl, tgt_lengths=tl)
    order = torch.arange(spot.seg_item.numel() - 1, -1, -1)
    bad = spot._replace(seg_item=spot.seg_item[order], seg_end=spot.seg_end[order],
                        seg_len=spot.seg_len[order], log_emit_seg=spot.log_emit_seg[order])
    with pytest.raises(AlignersInputError, match="sorted"):
        phrasal_hsmm_sparse_posteriors(bad, **kw)
    with pytest.raises(AlignersInputError, match="seg_len"):
        phrasal_hsmm_sparse_posteriors(spot._replace(seg_len=spot.seg_len + 2), **kw)
    dup = spot._replace(seg_item=spot.seg_item[[0, 0]], seg_end=spot.seg_end[[0, 0]],
                        seg_len=spot.seg_len[[0, 0]], log_emit_seg=spot.log_emit_seg[[0, 0]])
    with pytest.raises(AlignersInputError, match="at most one"):
        phrasal_hsmm_sparse_posteriors(dup, **kw)
    with pytest.raises(AlignersInputError, match="log_emit_seg"):
        phrasal_hsmm_sparse_posteriors(spot._replace(log_emit_seg=spot.log_emit_seg[:, :2]),
                                       **kw)
