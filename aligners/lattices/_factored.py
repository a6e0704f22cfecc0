"""Input checks and cleaning shared by the factored HMM and HSMM lattices: masked states get
-inf potentials, padded positions emission 0, NaN / +inf at a real entry raise
`AlignersInputError`.
"""

from typing import NamedTuple

import torch

from aligners.errors import AlignersInputError
from aligners.lattices._core import check_lengths, length_mask, semiring_zero

__all__ = [
    "FromGradients",
    "bad_rows",
    "clean_factored",
    "autograd_grads",
    "finite_shift",
    "logspace_grads",
    "needs_grad",
]


class Cleaned(NamedTuple):
    """Cleaned potentials; `pos_mask` (B,N) bool marks real positions."""

    init: torch.Tensor
    trans: torch.Tensor
    emit: torch.Tensor
    lengths: torch.Tensor
    pos_mask: torch.Tensor


def _shape_error(name: str, expected: str, got: torch.Tensor) -> AlignersInputError:
    return AlignersInputError(f"{name}: expected shape {expected}, got {tuple(got.shape)}")


def _check_finite_or_neg_inf(name: str, x: torch.Tensor) -> None:
    # One float64 reduction screens the tensor: the sum is NaN or +inf iff some entry is NaN
    # or +inf (finite float32 values cannot overflow it); only then look element-wise.
    total = x.sum(dtype=torch.float64)
    if not (torch.isnan(total) or total == float("inf")):
        return
    if bool((torch.isnan(x) | torch.isposinf(x)).any()):
        raise AlignersInputError(f"{name}: contains NaN or +inf at a real position/state")


def clean_factored(
    log_init: torch.Tensor,
    log_trans: torch.Tensor,
    log_emit: torch.Tensor,
    lengths: torch.Tensor | None,
    state_mask: torch.Tensor | None,
    *,
    emit_name: str = "log_emit",
    emit_extra_dims: int = 0,
) -> Cleaned:
    """Validate shapes/dtypes and return cleaned copies (see module docstring).

    `log_emit` is (B,N,C) for the HMM, or (B,N,K,C) for the HSMM (`emit_extra_dims=1`).
    """
    for name, x in (("log_init", log_init), ("log_trans", log_trans), (emit_name, log_emit)):
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise AlignersInputError(f"{name}: expected a floating-point tensor")
    if log_init.dim() != 2:
        raise _shape_error("log_init", "(B,C)", log_init)
    B, C = log_init.shape
    if log_emit.dim() != 3 + emit_extra_dims or log_emit.shape[0] != B or log_emit.shape[-1] != C:
        raise _shape_error(emit_name, "(B,N,C)" if not emit_extra_dims else "(B,N,K,C)", log_emit)
    N = log_emit.shape[1]
    if N < 1 or C < 1:
        raise AlignersInputError(f"{emit_name}: need N >= 1 and C >= 1, got N={N}, C={C}")
    if log_init.dtype != log_emit.dtype or log_trans.dtype != log_emit.dtype:
        raise AlignersInputError("log_init, log_trans and emissions must share one dtype")
    if log_trans.shape != (B, C, C):
        raise _shape_error("log_trans", f"(B,C,C)=({B},{C},{C})", log_trans)
    device = log_emit.device
    lengths = check_lengths(lengths, batch=B, n=N, device=device)
    pos_mask = length_mask(lengths, N)
    neg_inf = float("-inf")
    init, trans, emit = log_init.detach(), log_trans.detach(), log_emit.detach()
    if state_mask is not None:
        if not isinstance(state_mask, torch.Tensor) or state_mask.shape != (B, C):
            raise AlignersInputError(f"state_mask: expected a (B,C)=({B},{C}) bool tensor")
        state_mask = state_mask.to(device=device, dtype=torch.bool)
        if not bool(state_mask.any(-1).all()):
            raise AlignersInputError("state_mask: every batch item needs at least one real state")
        if bool(state_mask.all()):
            state_mask = None  # nothing to mask: skip the (costly) masked copies
    if state_mask is not None:
        init = init.masked_fill(~state_mask, neg_inf)
        pair = state_mask[:, :, None] & state_mask[:, None, :]
        trans = trans.masked_fill(~pair, neg_inf)
    if bool((lengths < N).any()):
        pm = pos_mask[:, :, None, None] if emit_extra_dims else pos_mask[:, :, None]
        emit = torch.where(pm, emit, torch.zeros((), dtype=emit.dtype, device=device))
    if state_mask is not None:
        sm = state_mask[:, None, None, :] if emit_extra_dims else state_mask[:, None, :]
        emit = emit.masked_fill(~sm, neg_inf)
    _check_finite_or_neg_inf("log_init", init)
    _check_finite_or_neg_inf("log_trans", trans)
    _check_finite_or_neg_inf(emit_name, emit)
    return Cleaned(init, trans, emit, lengths, pos_mask)


def finite_shift(x: torch.Tensor, dim) -> torch.Tensor:
    """max over `dim` (keepdim), with -inf replaced by 0 so `x - shift` never gives NaN."""
    m = x.amax(dim=dim, keepdim=True)
    return torch.where(torch.isfinite(m), m, torch.zeros_like(m))


def bad_rows(scales: torch.Tensor, pos_mask: torch.Tensor, num_states: int) -> torch.Tensor:
    """(B,) bool: items with a per-step scale `scales` (B,N) at a real position below the
    smallest one the probability-space recursions trust (tiny / eps · C), or not finite:
    they are recomputed in log space."""
    fi = torch.finfo(scales.dtype)
    floor = fi.tiny / fi.eps * num_states
    return (((scales < floor) | ~torch.isfinite(scales)) & pos_mask).any(1)


def autograd_grads(forward, tensors, lengths):
    """Run `forward(*leaves, lengths) -> (log Z (B,), *extra)` on autograd-leaf copies of
    `tensors` (the caller's are never touched; also under inference mode) -> (log Z, extra,
    gradients of its finite entries w.r.t. each tensor, zero where unused: trans if N == 1)."""
    with torch.inference_mode(False), torch.enable_grad():
        leaves = [x.detach().clone().requires_grad_(True) for x in tensors]
        logz, *extra = forward(*leaves, lengths)
        grads = torch.autograd.grad(torch.where(torch.isfinite(logz), logz, 0.0).sum(), leaves,
                                    allow_unused=True)
    grads = [torch.zeros_like(x) if g is None else g for g, x in zip(grads, leaves)]
    return logz.detach(), extra, grads


def logspace_grads(forward, cl: Cleaned, idx: torch.Tensor):
    """The exact fallback for the items `idx` whose scaled recursion underflows: (log Z, d/d
    init, d/d trans, d/d emit) by `autograd_grads` of the log-space `forward` on the inputs
    clamped at the semiring zero; an impossible item gets -inf and zero gradients."""
    neg = semiring_zero(cl.emit.dtype)
    tensors = [x[idx].clamp(min=neg) for x in (cl.init, cl.trans, cl.emit)]
    z, _, grads = autograd_grads(forward, tensors, cl.lengths[idx])
    ok = z > neg / 2
    grads = [torch.where(ok.view(-1, *[1] * (g.dim() - 1)), g.nan_to_num(0.0), 0.0)
             for g in grads]
    return torch.where(ok, z, float("-inf")), *grads


def needs_grad(*inputs: torch.Tensor) -> bool:
    """Whether autograd will want gradients of a result computed from `inputs`."""
    return torch.is_grad_enabled() and any(x.requires_grad for x in inputs)


class FromGradients(torch.autograd.Function):
    """log Z (B,) with a precomputed first-order backward: ``apply(grads, log_init, log_trans,
    log_emit, lengths, state_mask)`` runs ``grads(...) -> (log Z, d/d log_init, d/d log_trans,
    d/d log_emit)`` once; the backward scales those by the incoming gradient."""

    @staticmethod
    def forward(ctx, grads, log_init, log_trans, log_emit, lengths, state_mask):
        logz, *partials = grads(log_init, log_trans, log_emit, lengths, state_mask)
        ctx.save_for_backward(*partials)
        return logz

    @staticmethod
    def backward(ctx, grad):
        scaled = (grad.view(-1, *[1] * (g.dim() - 1)) * g for g in ctx.saved_tensors)
        return None, *scaled, None, None
