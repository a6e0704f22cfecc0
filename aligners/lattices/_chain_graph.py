"""The GEMM scan of the chain lattices replayed as CUDA graphs (private): method "graph".

On a GPU the scan (``_chain_scan.scan_log_partition``) is bound by the host: ~230 small
kernels per forward + backward, each launched from Python through autograd, while the GPU
itself is busy for a fraction of the call. ``graphed_scan_log_partition`` captures the
scan's forward and its backward once per input shape with
``torch.cuda.make_graphed_callables`` and then replays them: one graph launch each way, the
same kernels, the same numbers (tests/test_cuda.py).

When a graph is used: the spans are on CUDA, require grad, grad mode is on (not inference
mode), no capture is under way, and the step matrices are small (B·T·D² <= ``MAX_CELLS``;
larger problems are not launch-bound, and each graph keeps its own memory pool). Otherwise
the plain scan runs. Captured graphs live in an LRU cache of ``CACHE_SIZE`` shapes
(``clear()`` empties it); capturing costs a few eager runs (warm-up + capture).
"""

from __future__ import annotations

from collections import OrderedDict

import torch

from aligners.lattices._chain_scan import scan_log_partition

__all__ = ["CACHE_SIZE", "MAX_CELLS", "clear", "graphed_scan_log_partition", "wants_graph"]

CACHE_SIZE = 8
MAX_CELLS = 1 << 23  # B·T·D² of the step matrices (32 MiB in float32)
_GRAPHS: OrderedDict = OrderedDict()


def clear() -> None:
    """Drop every captured graph (and its memory pool once unreferenced)."""
    _GRAPHS.clear()


def wants_graph(spans: torch.Tensor) -> bool:
    """spans (B, T, S, C, C): whether ``graphed_scan_log_partition`` would replay a graph."""
    batch, t, size, c, _ = spans.shape
    return (spans.is_cuda and spans.requires_grad and torch.is_grad_enabled()
            and not torch.is_inference_mode_enabled()
            and not torch.cuda.is_current_stream_capturing()
            and batch * t * (size * c) ** 2 <= MAX_CELLS)


def graphed_scan_log_partition(spans: torch.Tensor, lengths: torch.Tensor):
    """``scan_log_partition`` (log Z (B,), flag (B,) bool; differentiable w.r.t. spans
    (B, T, S, C, C)) through a cached CUDA graph where ``wants_graph``, else eagerly.
    The outputs are fresh tensors (the graph's static outputs are copied out)."""
    if not wants_graph(spans):
        return scan_log_partition(spans, lengths)
    key = (tuple(spans.shape), spans.dtype, spans.device, lengths.dtype)
    graphed = _GRAPHS.get(key)
    if graphed is None:
        sample = (spans.detach().clone().requires_grad_(True), lengths.clone())
        graphed = torch.cuda.make_graphed_callables(scan_log_partition, sample,
                                                    num_warmup_iters=2)
        _GRAPHS[key] = graphed
        while len(_GRAPHS) > CACHE_SIZE:
            _GRAPHS.popitem(last=False)
    else:
        _GRAPHS.move_to_end(key)
    log_z, flag = graphed(spans, lengths)
    return log_z.clone(), flag.clone()
