"""The CUDA-graph cache of the chain scan (``aligners.lattices._chain_graph``), on the CPU:
the capture itself is replaced by a counting stand-in (captures need a GPU; tests/test_cuda.py
checks the real graphs' numbers there). Checked: a shape's first call runs eagerly, its second
captures, later calls reuse the capture; the cache keeps the most recently used graphs within
the memory budget; the eager fallback's numbers are the scan's."""

import pytest
import torch

from aligners.lattices import _chain_graph as graph
from aligners.lattices._chain_scan import scan_log_partition


@pytest.fixture
def captures(monkeypatch):
    made = []

    def fake_make_graphed_callables(fn, sample, num_warmup_iters):
        made.append(tuple(sample[0].shape))
        return fn

    monkeypatch.setattr(torch.cuda, "make_graphed_callables", fake_make_graphed_callables)
    graph.clear()
    yield made
    graph.clear()


def _spans(batch, t, c=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, t, 1, c, c, generator=g), torch.full((batch,), t + 1)


def test_second_call_of_a_shape_captures_and_later_calls_reuse(captures):
    spans, lengths = _spans(2, 5)
    assert graph._graph_for(spans, lengths) is None and captures == []
    assert graph._graph_for(spans, lengths) is scan_log_partition
    assert graph._graph_for(_spans(2, 5, seed=1)[0], lengths) is scan_log_partition
    assert captures == [(2, 5, 1, 3, 3)]  # one capture for three calls of the shape
    other, other_len = _spans(4, 5)
    assert graph._graph_for(other, other_len) is None  # a new shape starts eager again
    assert len(captures) == 1


def test_cache_keeps_the_most_recent_graphs_within_the_budget(captures, monkeypatch):
    one = graph.POOL_FACTOR * 4 * 9 * 4  # estimated bytes of a B*T = 4, D = 3 float32 graph
    monkeypatch.setattr(graph, "POOL_BUDGET", 2 * one)
    keys = []
    for batch, t in ((1, 4), (2, 2), (4, 1), (2, 2), (1, 4)):  # all of the same size
        spans, lengths = _spans(batch, t)
        graph._graph_for(spans, lengths)
        graph._graph_for(spans, lengths)
        keys.append((tuple(spans.shape), spans.dtype, spans.device, lengths.dtype))
    # (4, 1) evicted (1, 4); reusing (2, 2) made (4, 1) the least recent, so (1, 4) coming
    # back (captured again) evicted (4, 1): two graphs fit the budget, the most recent ones
    assert len(captures) == 4
    assert list(graph._GRAPHS) == [keys[1], keys[0]]


def test_eager_fallback_equals_the_scan():
    spans, lengths = _spans(3, 6)
    x = spans.clone().requires_grad_(True)
    z, flag = graph.graphed_scan_log_partition(x, lengths)  # CPU: never a graph
    z_ref, flag_ref = scan_log_partition(spans, lengths)
    assert torch.equal(z.detach(), z_ref) and torch.equal(flag, flag_ref)
    assert not graph.wants_graph(x) and graph._GRAPHS == {}
