"""The GEMM scan of the chain lattices replayed as CUDA graphs (private): method "graph".

``graphed_scan_log_partition`` captures ``_chain_scan.scan_log_partition`` forward and
backward once per input shape (``torch.cuda.make_graphed_callables``, on the shape's second
call) and replays them: one launch each way instead of ~230, the same numbers. Used where
``wants_graph``: CUDA spans requiring grad, grad mode on, no autocast or capture, and
B·T·D² <= ``MAX_CELLS``; else the plain scan. Graphs live in an LRU cache whose estimated
pool memory (``POOL_FACTOR`` x the step matrices' bytes) stays under ``POOL_BUDGET``.
"""

from __future__ import annotations

from collections import OrderedDict

import torch

from aligners.lattices._chain_scan import scan_log_partition

__all__ = ["MAX_CELLS", "POOL_BUDGET", "POOL_FACTOR", "clear", "graphed_scan_log_partition",
           "wants_graph"]

MAX_CELLS = 1 << 23  # B·T·D² of the step matrices (32 MiB in float32)
POOL_FACTOR = 20  # pool bytes per step-matrix byte: 20.3x and 17.9x measured on an H100
POOL_BUDGET = 2 << 30  # bytes of graph pools kept (estimated)
_GRAPHS: OrderedDict = OrderedDict()  # key -> (graphed callable, estimated bytes)
_SEEN: OrderedDict = OrderedDict()  # keys seen once (bounded)


def clear() -> None:
    """Drop every captured graph (and its memory pool once unreferenced) and the seen shapes."""
    _GRAPHS.clear()
    _SEEN.clear()


def _step_cells(spans: torch.Tensor) -> int:
    """B·T·D² of the scan's step matrices for spans (B, T, S, C, C), D = S·C."""
    batch, t, size, c, _ = spans.shape
    return batch * t * (size * c) ** 2


def wants_graph(spans: torch.Tensor) -> bool:
    """spans (B, T, S, C, C): whether a graph may serve this call (device, autograd, size)."""
    return (spans.is_cuda and spans.requires_grad and torch.is_grad_enabled()
            and not torch.is_inference_mode_enabled()
            and not torch.is_autocast_enabled()  # CUDA autocast: graphs need its cache off
            and spans.device.index == torch.cuda.current_device()  # captures on this device
            and not torch.cuda.is_current_stream_capturing()
            and _step_cells(spans) <= MAX_CELLS)


def _graph_for(spans: torch.Tensor, lengths: torch.Tensor):
    """The cached graphed scan of this input shape; captured on the shape's second call;
    None on its first."""
    key = (tuple(spans.shape), spans.dtype, spans.device, lengths.dtype)
    if key in _GRAPHS:
        _GRAPHS.move_to_end(key)
        return _GRAPHS[key][0]
    if key not in _SEEN:
        _SEEN[key] = True
        while len(_SEEN) > 1024:
            _SEEN.popitem(last=False)
        return None
    del _SEEN[key]
    sample = (spans.detach().clone().requires_grad_(True), lengths.clone())
    graphed = torch.cuda.make_graphed_callables(scan_log_partition, sample, num_warmup_iters=2)
    _GRAPHS[key] = (graphed, POOL_FACTOR * _step_cells(spans) * spans.element_size())
    while len(_GRAPHS) > 1 and sum(b for _, b in _GRAPHS.values()) > POOL_BUDGET:
        _GRAPHS.popitem(last=False)
    return graphed


def graphed_scan_log_partition(spans: torch.Tensor, lengths: torch.Tensor):
    """``scan_log_partition`` (log Z (B,), flag (B,) bool; differentiable w.r.t. spans
    (B, T, S, C, C)) through a cached CUDA graph where ``wants_graph`` and the shape was seen
    before, else eagerly. The outputs are fresh tensors (the graph's static outputs are
    copied out)."""
    graphed = _graph_for(spans, lengths) if wants_graph(spans) else None
    if graphed is None:
        return scan_log_partition(spans, lengths)
    log_z, flag = graphed(spans, lengths)
    return log_z.clone(), flag.clone()
