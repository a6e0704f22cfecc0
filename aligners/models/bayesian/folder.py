"""The bayesian family's aligned model (`aligners.models.aligned.WordAlignment`) and its model
folder in the one export format (aligners/export.py).

Folder: model.safetensors (keys (P,) int64, lex_fwd/lex_rev (P,) float32, null_*, jump_*,
fert_* float64), config.json (the BayesConfig and the decoding), and vocab.json
({"src": [...], "tgt": [...]}, ids = positions). Loading never unpickles. A loaded model's
counts are Dirichlet pseudo-counts when it aligns new text (eflomal's priors workflow: the
new text's counts then join the model's; see model.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from aligners.data import too_long_left_out
from aligners.errors import AlignersInputError
from aligners.models.aligned import Aligned, Decoding, RunOptions, WordAlignment
from aligners.models.bayesian import FAMILY, config
from aligners.models.bayesian.config import BayesConfig
from aligners.models.bayesian.decode import link_lines
from aligners.models.bayesian.model import BayesAligner
from aligners.models.bayesian.slots import BayesMarginals
from aligners.symmetrize import HEURISTICS

__all__ = ["KIND", "BayesianAlignment", "BayesAligned"]

KIND = FAMILY.kind
POSTERIOR = 0.5  # the per-direction posterior threshold when none is given


@dataclass
class BayesAligned(Aligned):
    """A text sampled by the Bayesian aligner: its averaged link marginals (the lines of
    its sentences [start, end) alone with `span`: a part of the text sampled together)."""

    marginals: BayesMarginals
    span: tuple[int, int] | None = None

    def lines(self, outputs, decoding: Decoding, *, posteriors: bool = False) -> dict:
        """Lines stream per sentence from the sparse marginals (no per-link objects)."""
        th = decoding.threshold if decoding.method == "posterior" else None
        mean, heuristic = None, decoding.symmetrize  # (the "sym" output's)
        if decoding.method == "mean":  # symmetric; no threshold: by the whole text's size
            mean = config.mean_threshold(self.marginals.corpus.n_sentences, decoding.threshold)
            heuristic = None
        return {name: link_lines(self.marginals, threshold=th, posteriors=posteriors,
                                 heuristic=heuristic if name == "sym" else None,
                                 mean=mean if name == "sym" else None, span=self.span,
                                 direction="rev" if name == "rev" else "fwd")
                for name in outputs}


@dataclass
class BayesianAlignment(WordAlignment):
    """The sampler with its counts (after a run, or loaded) and the saved decoding."""

    model: BayesAligner
    decoding: dict = field(default_factory=dict)
    n_pairs: int = 0  # pairs of the last text sampled (sizes the default mean threshold)

    family = FAMILY.name
    METHODS, DEFAULT = config.METHODS, config.DECODING
    USES_TORCH = False

    @classmethod
    def fit(cls, pairs, config: BayesConfig, run: RunOptions):
        """Sample `pairs` (training and alignment are one pass, as in eflomal)."""
        model = cls(BayesAligner(config))
        return model, model.decode(pairs, run)

    def decode(self, pairs, run: RunOptions) -> BayesAligned:
        """Sample new text with this model's counts as priors (they then include it)."""
        marginals = self.model.align(too_long_left_out(pairs), seed=run.seed, bar=run.bar)
        self.n_pairs = marginals.corpus.n_sentences
        return BayesAligned(marginals)

    @classmethod
    def decoding_for(cls, saved, method=None, threshold=None, symmetrize=None) -> Decoding:
        """As the base's (the heuristic checked there, `Decoding.check`), with: a heuristic
        asked for with the mean decoding means Viterbi links so combined, and a method of one
        direction ("viterbi", "posterior") needs a heuristic, never "none"."""
        sized = threshold is None and (saved is None or saved.threshold is None)
        dec = super().decoding_for(saved, method, POSTERIOR if sized else threshold,
                                   symmetrize)
        if dec.method == "mean" and dec.symmetrize != "none":  # a heuristic asked for
            return Decoding("viterbi", dec.threshold, dec.symmetrize)
        if dec.method == "mean" and sized:  # by the text's size (config.mean_threshold)
            return replace(dec, threshold=None)
        if dec.method != "mean" and dec.symmetrize == "none":
            raise AlignersInputError(f"--symmetrize {dec.symmetrize!r}: the Bayesian "
                                     f"aligner's directions are combined by one of "
                                     f"{', '.join(HEURISTICS)}")
        return dec

    def save_to(self, folder: str | Path, decoding: Decoding | dict | None = None) -> Path:
        """Write the model (after `align`) to `folder` atomically; returns the folder. A
        Decoding is saved with the mean threshold used on the text it sampled."""
        import torch

        from aligners.export import write_model

        if isinstance(decoding, Decoding):
            decoding = asdict(replace(decoding, threshold=config.mean_threshold(
                self.n_pairs, decoding.threshold)))
        arrays, cfg, vocab = self.model.state()
        tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in arrays.items()}
        return write_model(folder, kind=KIND, tensors=tensors,
                           config={"bayes": cfg, "decoding": decoding or {}},
                           extras={"vocab": vocab})

    @classmethod
    def from_folder(cls, folder) -> BayesianAlignment:
        """A `ModelFolder` (or its path) -> the sampler and the saved decoding, checked."""
        from aligners.export import ModelFolder, read_model

        if not isinstance(folder, ModelFolder):
            folder = read_model(folder, kind=KIND)
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
        return cls(model, dict(cfg.get("decoding") or {})).checked(folder)
