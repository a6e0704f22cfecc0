"""An ensemble of trained monolingual aligners: links where their mean link posterior is high.

Shapes: pairs as `MonoAligner.align`; per pair an (I, J) float64 link-posterior matrix in
source-target order. `MonoEnsemble(members)` holds K >= 2 `MonoAligner`s (any kinds, one or
both directions each):
- `posteriors(pairs, direction=None)`: per pair the mean, over the members and over each
  member's directions (all of them, or only `direction`; a member without it is skipped), of
  `MonoAligner.posteriors`;
- `align(pairs, threshold=0.5, combine=...)`: the links whose mean posterior exceeds
  `threshold`, output as `MonoAligner.align(combine="posterior")` (1x1 blocks, score = the
  summed kept means / I). `combine="posterior"` averages every direction; `"none"` (the
  default, as `MonoAligner.align`) only `direction` (default: the first of `directions`). An
  ensemble always decodes this way: Viterbi paths of different models have no mean, so
  `decode` is not used.
- `save(folder)`: one model folder of kind `mono-ensemble` (member k's tensors under the
  prefix `m<k>.`, its config as `config["members"][k]`); `aligners.load` returns the ensemble.
Cost: the members' posterior passes (K models x the directions used); O(K * I * J) per pair
here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from aligners.errors import AlignersInputError
from aligners.models.mono.aligner import (
    DIRECTIONS,
    MonoAligner,
    _as_pairs,
    check_decode,
    load_mono,
)
from aligners.models.mono.combine import posterior_output

__all__ = ["KIND", "MonoEnsemble", "load_aligners", "load_any"]

KIND = "mono-ensemble"


class MonoEnsemble:
    """K >= 2 monolingual aligners decoded by their mean link posterior (module docstring)."""

    def __init__(self, members: Sequence[MonoAligner], *, meta: dict[str, Any] | None = None):
        members = list(members)
        if len(members) < 2 or not all(isinstance(m, MonoAligner) for m in members):
            raise AlignersInputError(f"an ensemble needs at least two monolingual aligners, "
                                     f"got {len(members)}")
        self.members, self.meta = members, dict(meta or {})
        self.kind = "ensemble"

    @property
    def directions(self) -> list[str]:
        """The directions some member has, in `DIRECTIONS` order."""
        return [d for d in DIRECTIONS if any(d in m.models for m in self.members)]

    def to(self, device) -> MonoEnsemble:
        for m in self.members:
            m.to(device)
        return self

    def posteriors(self, pairs, *, direction: str | None = None, batch_size: int | None = None,
                   embedder=None, encoder_precision: str | None = None) -> list[torch.Tensor]:
        """Per pair the (I, J) float64 mean link posterior (module docstring)."""
        if direction is not None and direction not in self.directions:
            raise AlignersInputError(f"no member has the {direction!r} direction; the "
                                     f"ensemble has {self.directions}")
        pairs = _as_pairs(pairs)
        runs = [(m, d) for m in self.members for d in m.directions if direction in (None, d)]
        total = None
        for m, d in runs:
            post = m.posteriors(pairs, direction=d, batch_size=batch_size, embedder=embedder,
                                encoder_precision=encoder_precision)
            total = post if total is None else [a + b for a, b in zip(total, post)]
        return [t / len(runs) for t in total]

    def align(self, pairs, target=None, *, direction: str | None = None,
              batch_size: int | None = None, embedder=None, decode: str = "posterior",
              threshold: float = 0.5, encoder_precision: str | None = None,
              combine: str = "none"):
        """Per pair (blocks, sorted links, score) of the mean posterior > `threshold`, in
        source-target order; `combine`: posterior (every direction) | none (`direction`, default
        the first). `decode` is accepted for `MonoAligner.align`'s signature and not used."""
        pairs = _as_pairs(pairs, target)
        _, threshold = check_decode("posterior", threshold)
        if combine not in ("posterior", "none"):
            raise AlignersInputError(f"an ensemble combines by mean posterior only "
                                     f"(combine=posterior or none), got {combine!r}")
        if combine == "posterior" and direction is not None:
            raise AlignersInputError("give a direction or combine='posterior', not both")
        if combine == "none":
            direction = direction or self.directions[0]
        means = self.posteriors(pairs, direction=direction, batch_size=batch_size,
                                embedder=embedder, encoder_precision=encoder_precision)
        return [posterior_output(m, threshold) for m in means]

    def save(self, folder: str | Path, *, config: dict[str, Any] | None = None) -> Path:
        """Write one model folder holding every member (module docstring); returns it."""
        from aligners.export import FORMAT, write_model

        tensors, members = {}, []
        for k, m in enumerate(self.members):
            kind, t, cfg = m.export_parts()
            tensors.update({f"m{k}.{name}": v for name, v in t.items()})
            members.append({"format": FORMAT, "kind": kind, **cfg})
        return write_model(folder, kind=KIND, tensors=tensors,
                           config={"members": members, **self.meta, **(config or {})})


def load_any(folder) -> MonoAligner | MonoEnsemble:
    """The mono family's `aligners.load` loader (on the CPU): an ensemble folder ->
    MonoEnsemble, any other mono kind -> MonoAligner (`aligner.load_mono`). A (member) config
    that does not fit raises AlignersInputError."""
    from aligners.export import ModelFolder

    if folder.kind != KIND:
        return load_mono(folder)
    members = folder.config.get("members")
    if not isinstance(members, list) or len(members) < 2:
        raise AlignersInputError("an ensemble folder needs a 'members' list of two or more "
                                 "model configs", path=str(folder.path / "config.json"))
    out = []
    for k, cfg in enumerate(members):
        prefix = f"m{k}."
        tensors = {n[len(prefix):]: t for n, t in folder.tensors.items() if n.startswith(prefix)}
        kind = cfg.get("kind") if isinstance(cfg, dict) else None
        out.append(load_mono(ModelFolder(path=folder.path, kind=kind, config=cfg,
                                         tensors=tensors)))
    meta = {k: v for k, v in folder.config.items() if k not in ("format", "kind", "members")}
    return MonoEnsemble(out, meta=meta)


def load_aligners(paths: Sequence[str | Path]) -> MonoAligner | MonoEnsemble:
    """The aligner of saved monolingual model folders: for one folder what `aligners.load`
    returns (a MonoAligner or a saved MonoEnsemble); for several, their ensemble (a saved
    ensemble contributes its members). A folder of another verb's family:
    AlignersInputError (`aligners.export.load`)."""
    from aligners.export import load

    models = [load(p, verb="monoalign") for p in paths]
    if len(models) == 1:
        return models[0]
    return MonoEnsemble([m for x in models for m in getattr(x, "members", [x])])

