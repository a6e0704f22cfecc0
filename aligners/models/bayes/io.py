"""Save / load the Bayesian aligner in the one export format (aligners/export.py).

Folder: model.safetensors (keys (P,) int64, lex_fwd/lex_rev (P,) float32, null_*, jump_*,
fert_* float64), config.json (kind "bayes-aligner", the BayesConfig and the decoding), and
vocab.json ({"src": [...], "tgt": [...]}, ids = positions). Loading never unpickles. A loaded
model's counts are Dirichlet pseudo-counts for the next `align` (see model.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from aligners.errors import AlignersInputError
from aligners.models.bayes.model import BayesAligner

__all__ = ["KIND", "save_bayes_aligner", "load_bayes_aligner", "from_folder"]

KIND = "bayes-aligner"


def save_bayes_aligner(folder: str | Path, model: BayesAligner, *,
                       decoding: dict | None = None) -> Path:
    """Write `model` (after `align`) to `folder` atomically; returns the folder."""
    import torch

    from aligners.export import write_model

    arrays, config, vocab = model.state()
    tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in arrays.items()}
    return write_model(folder, kind=KIND, tensors=tensors,
                       config={"bayes": config, "decoding": decoding or {}},
                       extras={"vocab": vocab})


def from_folder(folder) -> BayesAligner:
    """LOADERS entry: a `ModelFolder` -> BayesAligner (with `.decoding`, the saved choice)."""
    cfg = folder.config
    try:
        vocab = folder.json("vocab")
        arrays = {k: v.numpy() for k, v in folder.tensors.items()}
        model = BayesAligner.from_state(arrays, dict(cfg["bayes"]), vocab)
    except (KeyError, TypeError, ValueError) as err:
        if isinstance(err, AlignersInputError):
            raise
        raise AlignersInputError(f"not a valid saved Bayesian aligner ({err})",
                                 path=str(folder.path)) from None
    model.decoding = dict(cfg.get("decoding") or {})
    return model


def load_bayes_aligner(folder: str | Path) -> BayesAligner:
    """Read a folder written by `save_bayes_aligner` (AlignersInputError when it is not)."""
    from aligners.export import read_model

    return from_folder(read_model(folder, kind=KIND))
