"""The Bayesian aligner's defaults and `aligners align` options, in one place (no torch,
no numba import: the CLI parser reads them).

`BayesConfig` holds eflomal's hyper-parameters and schedule (Östling & Tiedemann 2016) and
how the sampler runs; `add_arguments` / `from_args` are its `aligners align --model bayesian`
options (unset options keep the dataclass defaults).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

from aligners.errors import AlignersInputError
from aligners.models.aligned import Decoding

__all__ = ["BayesConfig", "METHODS", "DECODING", "add_arguments", "from_args", "adjust_loaded"]

METHODS = ("viterbi", "posterior")  # argmax of the averaged marginals, or a threshold
DECODING = Decoding("viterbi", 0.5, "grow-diag-final-and")


@dataclass
class BayesConfig:
    """Hyper-parameters (paper / eflomal defaults) and the sampling schedule."""

    model: int = 3  # 1 IBM1, 2 HMM, 3 HMM + fertility
    n_samplers: int = 3
    rel_iterations: float = 1.0
    iterations: list[int] | None = None  # sweeps per stage; None = eflomal's schedule
    burn_in: float = 0.5  # share of the last stage's sweeps before marginals accumulate
    p_null: float = 0.2
    lex_alpha: float = 0.001
    null_alpha: float = 0.001
    jump_alpha: float = 0.5
    fert_alpha: float = 0.5
    max_jump: int = 100  # jumps beyond +-max_jump share a bucket (small values let long
    # jumps pool into the edge buckets, which then attract alignments: AER much worse)
    max_fert: int = 7  # fertilities >= max_fert share a bucket
    threads: int = 2  # 1: directions one after another; 2: in parallel
    lowercase: bool = True  # words are lowercased before encoding (as eflomal does)
    sampler: str = "exact"  # or "batched": torch, approximate (batched.py)
    device: str = "cpu"  # batched sampler only
    batch_cells: int = 2_000_000  # batched sampler: padded cells per batch
    marginal_slots: int = 0  # sparse link marginals kept per observed token (sampler.py);
    # 0 = auto: 3, or 2 from 2M observed tokens per direction on (memory; same AER at 200k)

    def check(self) -> None:
        """ValueError with a one-line message for an invalid value."""
        if self.model not in (1, 2, 3):
            raise ValueError(f"model must be 1, 2 or 3, got {self.model}")
        if self.n_samplers < 1:
            raise ValueError(f"n_samplers must be >= 1, got {self.n_samplers}")
        if not 0.0 <= self.p_null < 1.0:
            raise ValueError(f"p_null must be in [0, 1), got {self.p_null}")
        for name in ("lex_alpha", "null_alpha", "jump_alpha", "fert_alpha", "rel_iterations"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive number, got {v}")
        if not 0.0 <= self.burn_in < 1.0:
            raise ValueError(f"burn_in must be in [0, 1), got {self.burn_in}")
        if self.sampler not in ("exact", "batched"):
            raise ValueError(f"sampler must be 'exact' or 'batched', got {self.sampler!r}")
        if self.marginal_slots < 0:
            raise ValueError(f"marginal_slots must be >= 1 (or 0: auto), got "
                             f"{self.marginal_slots}")
        if self.max_jump < 1 or self.max_fert < 1:
            raise ValueError("max_jump and max_fert must be >= 1")
        if self.iterations is not None and (len(self.iterations) != 3 or
                                            min(self.iterations) < 0 or
                                            self.iterations[self.model - 1] < 1):
            raise ValueError("iterations must be 3 sweep counts (IBM1, HMM, fertility) with "
                             f"at least 1 for the last stage used; got {self.iterations}")


def add_arguments(p: argparse.ArgumentParser) -> None:
    b = p.add_argument_group("bayesian model (--model bayesian)")
    b.add_argument("--seed", type=int, default=0,
                   help="sampler seed, >= 0 (runs are reproducible)")
    b.add_argument("--samplers", type=int, default=None,
                   help=f"independent samplers ({BayesConfig.n_samplers})")
    b.add_argument("--length", type=float, default=None,
                   help="relative number of sweeps (1.0 = eflomal's schedule)")
    b.add_argument("--null-prior", type=float, default=None,
                   help=f"NULL probability ({BayesConfig.p_null})")
    b.add_argument("--stages", type=int, choices=(1, 2, 3), default=None,
                   help=f"1 IBM1, 2 +HMM, 3 +fertility (default {BayesConfig.model})")
    b.add_argument("--sampler-threads", type=int, choices=(1, 2), default=BayesConfig.threads,
                   help="2: both directions in parallel (default)")
    b.add_argument("--sampler", choices=("exact", "batched"), default=None,
                   help="exact: the sequential numba sampler (default, CPU); batched: the "
                        "approximate block sampler on torch tensors (runs on --device)")


def _check_device(args: argparse.Namespace, sampler: str) -> None:
    if args.device != "cpu" and sampler != "batched":
        raise AlignersInputError(f"--device {args.device}: the Bayesian aligner's exact "
                                 "sampler runs on the CPU; use --device cpu, or "
                                 "--sampler batched")


def from_args(args: argparse.Namespace) -> BayesConfig:
    """The BayesConfig that the options describe (AlignersInputError for a bad value)."""
    kw = {"threads": args.sampler_threads, "lowercase": True, "device": args.device}
    if args.sampler is not None:
        kw["sampler"] = args.sampler
    for flag, name in (("samplers", "n_samplers"), ("length", "rel_iterations"),
                       ("null_prior", "p_null"), ("stages", "model")):
        if getattr(args, flag) is not None:
            kw[name] = getattr(args, flag)
    try:
        cfg = BayesConfig(**kw)
        cfg.check()
    except ValueError as err:
        raise AlignersInputError(f"--model bayesian: {err}") from None
    _check_device(args, cfg.sampler)
    return cfg


def adjust_loaded(model, args: argparse.Namespace) -> None:
    """How a loaded model samples new text: --sampler-threads, --device, --sampler."""
    c = model.model.config
    c.threads, c.device = args.sampler_threads, args.device
    if args.sampler is not None:
        c.sampler = args.sampler
    _check_device(args, c.sampler)
