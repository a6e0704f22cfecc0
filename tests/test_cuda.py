"""On a CUDA GPU every lattice gives the CPU's numbers (marker ``cuda``; without a GPU the
same comparisons run CPU-vs-CPU, see cuda_device.py).

Tolerances: float64 inputs: log-partitions, marginals and scores within 1e-8 (absolute) of
the CPU; Viterbi paths identical. float32 inputs (the automatic parallel scan on CUDA against
the CPU's per-position loop): log Z within 1e-5 relative, marginals within 1e-4 absolute.
Samplers draw from a CUDA generator, so draws differ from the CPU's: they are checked to be
valid structures with the right frequencies. The backtrack and the scan run under
``torch.cuda.set_sync_debug_mode("error")``: no host synchronisation inside them.

``ALIGNERS_TEST_DEVICE=cpu`` runs the same comparisons CPU-vs-CPU on a GPU machine too.
"""


import pytest
import torch
from cuda_device import CUDA_MARKS, DEVICE

from aligners.lattices import _chain_scan as scan
from aligners.lattices import (
    alignment_hmm_posteriors,
    alignment_hmm_viterbi,
    factored_log_partition,
    factored_viterbi,
    hmm_log_likelihood,
    hmm_posteriors,
    hmm_sample,
    hmm_viterbi,
    hsmm_posteriors,
    hsmm_sample,
    hsmm_viterbi,
    sample_categorical,
)
from aligners.lattices._core import backtrack
from aligners.lattices.linear_chain import LinearChain
from aligners.lattices.semimarkov import SemiMarkov
from aligners.semirings import EntropySemiring, KMaxSemiring, LogSemiring, MaxSemiring

pytestmark = CUDA_MARKS


class _no_sync:  # noqa: N801
    """Context: any host-device synchronisation raises (CUDA only)."""

    def __enter__(self):
        if DEVICE.type == "cuda":
            torch.cuda.set_sync_debug_mode("error")

    def __exit__(self, *exc):
        if DEVICE.type == "cuda":
            torch.cuda.set_sync_debug_mode("default")


def _dev(*xs):
    return tuple(x.to(DEVICE) for x in xs)


def _close(a, b, atol=1e-8, rtol=0.0):
    if isinstance(a, (tuple, list)):
        for x, y in zip(a, b):
            _close(x, y, atol, rtol)
        return
    a = a.detach().cpu() if isinstance(a, torch.Tensor) else torch.as_tensor(a)
    b = b.detach().cpu() if isinstance(b, torch.Tensor) else torch.as_tensor(b)
    if not a.is_floating_point():
        assert torch.equal(a, b)
        return
    assert torch.allclose(a, b, atol=atol, rtol=rtol), float((a - b).abs().max())


def _chain(kind, dtype, B=6, N=12, K=3, C=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    shape = (B, N - 1, C, C) if kind == "linear" else (B, N - 1, K, C, C)
    lp = torch.randn(*shape, generator=g, dtype=dtype)
    lengths = torch.randint(1, N + 1, (B,), generator=g)
    lengths[0] = N
    return (LinearChain if kind == "linear" else SemiMarkov), lp, lengths


@pytest.mark.parametrize("kind,k", [("linear", None), ("semi", 3), ("semi", 8)])
@pytest.mark.parametrize("method", ["auto", "loop", "scan", "graph"])
def test_chain_float64_equals_cpu(kind, k, method):
    struct, lp, lengths = _chain(kind, torch.float64, K=k or 3)
    cpu = struct(LogSemiring, "loop")
    gpu = struct(LogSemiring, method)
    lp_d, len_d = _dev(lp, lengths)
    _close(gpu.sum(lp_d, len_d), cpu.sum(lp, lengths))
    _close(gpu.marginals(lp_d, len_d), cpu.marginals(lp, lengths))
    x = lp_d.clone().requires_grad_(True)
    gpu.sum(x, len_d).sum().backward()
    _close(x.grad, cpu.marginals(lp, lengths))
    for semiring in (MaxSemiring, KMaxSemiring(2), EntropySemiring):
        _close(struct(semiring, method).sum(lp_d, len_d), struct(semiring, "loop").sum(lp, lengths),
               atol=1e-7)
    s_d, parts_d = struct(MaxSemiring, method).viterbi(lp_d, len_d)
    s_c, parts_c = cpu.viterbi(lp, lengths)
    _close(s_d, s_c)
    _close(parts_d, parts_c)


@pytest.mark.parametrize("kind", ["linear", "semi"])
def test_chain_float32_auto_equals_cpu_loop(kind):
    struct, lp, lengths = _chain(kind, torch.float32, B=32, N=40, C=20)
    lp_d, len_d = _dev(lp, lengths)
    z = struct(LogSemiring).sum(lp_d, len_d)
    _close(z, struct(LogSemiring, "loop").sum(lp, lengths), atol=0.0, rtol=1e-5)
    m = struct(LogSemiring).marginals(lp_d, len_d)
    _close(m, struct(LogSemiring, "loop").marginals(lp, lengths), atol=1e-4)


@pytest.mark.parametrize("kind", ["linear", "semi"])
def test_graph_replays_new_inputs_and_keeps_earlier_results(kind):
    """The CUDA-graph scan (method "graph"): the second call of a shape captures the graph,
    later calls with new values replay it; each call's log Z and gradient equal the CPU
    loop's, and earlier results are not overwritten by a replay."""
    from aligners.lattices import _chain_graph

    _chain_graph.clear()
    struct, lp1, lengths = _chain(kind, torch.float32, B=8, N=16, C=6, seed=1)
    lp2, lp3 = (_chain(kind, torch.float32, B=8, N=16, C=6, seed=s)[1] for s in (2, 3))
    len_d = _dev(lengths)[0]
    outs, inputs = [], (lp1, lp2, lp3, lp1)  # eager, capture + replay, replay, replay
    for lp in inputs:
        x = lp.to(DEVICE).clone().requires_grad_(True)  # a fresh leaf per call
        z = struct(LogSemiring, "graph").sum(x, len_d)
        z.sum().backward()
        outs.append((z.detach(), x.grad))
    assert len(_chain_graph._GRAPHS) == (1 if DEVICE.type == "cuda" else 0)
    for (z, grad), lp in zip(outs, inputs):
        _close(z, struct(LogSemiring, "loop").sum(lp, lengths), atol=0.0, rtol=1e-5)
        _close(grad, struct(LogSemiring, "loop").marginals(lp, lengths), atol=1e-4)
    assert not torch.equal(outs[0][0], outs[1][0])


def test_scan_and_backtrack_have_no_host_sync():
    _, lp, lengths = _chain("semi", torch.float32)
    spans, len_d = _dev(lp[:, :, 1:], lengths)
    with _no_sync():
        z, flag = scan.scan_log_partition(spans, len_d)
    _close(z, scan.scan_log_partition(lp[:, :, 1:], lengths)[0], atol=0.0, rtol=1e-5)
    g = torch.Generator().manual_seed(1)
    label_ptr = torch.randint(0, 4, (5, 9, 4), generator=g)
    length_ptr = torch.minimum(torch.randint(1, 3, (5, 9, 4), generator=g),
                               torch.arange(1, 10).view(1, 9, 1))
    last, label = torch.tensor([9, 0, 3, 5, 8]), torch.tensor([0, 1, 2, 3, 0])
    args_d = _dev(length_ptr, label_ptr, last, label)
    with _no_sync():
        got = backtrack(args_d[0], args_d[1], last=args_d[2], label=args_d[3])
    _close(got, backtrack(length_ptr, label_ptr, last=last, label=label))


def _factored(B=5, N=7, C=4, K=3, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    init = torch.randn(B, C, generator=g, dtype=dtype)
    trans = torch.randn(B, C, C, generator=g, dtype=dtype)
    emit = torch.randn(B, N, C, generator=g, dtype=dtype)
    seg = torch.randn(B, N, K, C, generator=g, dtype=dtype)
    lengths = torch.randint(1, N + 1, (B,), generator=g)
    mask = torch.rand(B, C, generator=g) < 0.8
    mask[:, 0] = True
    return init, trans, emit, seg, lengths, mask


def test_hmm_and_hsmm_equal_cpu():
    init, trans, emit, seg, lengths, mask = _factored()
    d = _dev(init, trans, emit, seg, lengths, mask)
    _close(hmm_posteriors(*d[:3], lengths=d[4], state_mask=d[5]),
           hmm_posteriors(init, trans, emit, lengths=lengths, state_mask=mask))
    _close(hmm_viterbi(*d[:3], lengths=d[4], state_mask=d[5]),
           hmm_viterbi(init, trans, emit, lengths=lengths, state_mask=mask))
    x = d[2].clone().requires_grad_(True)
    hmm_log_likelihood(d[0], d[1], x, lengths=d[4]).sum().backward()
    _close(x.grad, hmm_posteriors(init, trans, emit, lengths=lengths).state_posteriors)
    _close(hsmm_posteriors(d[0], d[1], d[3], lengths=d[4], state_mask=d[5]),
           hsmm_posteriors(init, trans, seg, lengths=lengths, state_mask=mask))
    v_d = hsmm_viterbi(d[0], d[1], d[3], lengths=d[4], state_mask=d[5])
    v_c = hsmm_viterbi(init, trans, seg, lengths=lengths, state_mask=mask)
    assert v_d.segments == v_c.segments
    _close((v_d.states, v_d.score), (v_c.states, v_c.score))


def test_alignment_hmm_and_factored_semimarkov_equal_cpu():
    g = torch.Generator().manual_seed(2)
    B, I, J = 6, 5, 8
    lp = torch.rand(B, I, J, generator=g, dtype=torch.float64) + 0.01
    nl = torch.rand(B, J, generator=g, dtype=torch.float64) + 0.01
    S = torch.rand(I + 1, I, generator=g, dtype=torch.float64) + 0.05
    sl, tl = torch.randint(1, I + 1, (B,), generator=g), torch.randint(1, J + 1, (B,), generator=g)
    d = _dev(lp, nl, S, sl, tl)
    kw_d, kw = {"src_lengths": d[3], "tgt_lengths": d[4], "p0": 0.2}, {
        "src_lengths": sl, "tgt_lengths": tl, "p0": 0.2}
    _close(alignment_hmm_posteriors(*d[:3], **kw_d), alignment_hmm_posteriors(lp, nl, S, **kw))
    _close(alignment_hmm_viterbi(*d[:3], **kw_d), alignment_hmm_viterbi(lp, nl, S, **kw))
    emit = torch.randn(B, 7, 3, 4, generator=g, dtype=torch.float64)
    trans, start = torch.randn(B, 4, 4, generator=g, dtype=torch.float64), torch.randn(
        B, 4, generator=g, dtype=torch.float64)
    lengths = torch.randint(2, 9, (B,), generator=g)
    e_d = _dev(emit, trans, start, lengths)
    _close(factored_log_partition(*e_d[:3], lengths=e_d[3]),
           factored_log_partition(emit, trans, start, lengths=lengths))
    s_d, paths_d = factored_viterbi(*e_d[:3], lengths=e_d[3])
    s_c, paths_c = factored_viterbi(emit, trans, start, lengths=lengths)
    _close(s_d, s_c)
    assert paths_d == paths_c


def test_samplers_on_device_are_valid_with_the_right_frequencies():
    gen = torch.Generator(device=DEVICE).manual_seed(0)
    logits = torch.tensor([0.0, 1.0, float("-inf"), -0.5], device=DEVICE)
    draws = sample_categorical(logits.expand(40000, 4), generator=gen)
    freq = torch.bincount(draws, minlength=4).double().cpu() / 40000
    _close(freq, logits.double().softmax(-1), atol=0.01)
    init, trans, emit, _, lengths, mask = _factored(dtype=torch.float32)
    d = _dev(init, trans, emit, lengths, mask)
    paths = hmm_sample(*d[:3], generator=gen, num_samples=8, lengths=d[3], state_mask=d[4])
    live = torch.arange(emit.shape[1], device=DEVICE)[None] < d[3][:, None]
    assert bool((paths[:, ~live] == -1).all()) and bool((paths[:, live] >= 0).all())
    assert bool(d[4].gather(1, paths.clamp(min=0).flatten(1).t().reshape(
        init.shape[0], -1)).all())  # sampled states are real states
    init, trans, _, seg, lengths, _ = _factored(dtype=torch.float32)
    hs = hsmm_sample(*_dev(init, trans, seg), generator=gen, num_samples=3,
                     lengths=lengths.to(DEVICE))
    hlive = torch.arange(seg.shape[1], device=DEVICE)[None] < lengths.to(DEVICE)[:, None]
    assert bool((hs.states[:, ~hlive] == -1).all()) and bool((hs.states[:, hlive] >= 0).all())
    struct, lp, lengths = _chain("semi", torch.float32)
    parts = struct().sample(*_dev(lp), 4, lengths=lengths.to(DEVICE), generator=gen)
    assert parts.device.type == DEVICE.type and parts.shape == (4,) + tuple(lp.shape)
    seq, _ = struct.from_parts(parts.flatten(0, 1))
    live = torch.arange(lp.shape[1] + 1, device=DEVICE)[None] < lengths.to(DEVICE)[:, None]
    assert bool((seq.view(4, *live.shape)[:, ~live] == -1).all())
