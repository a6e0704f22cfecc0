"""`task: baseline`: the diagonal aligner scored on a gold test set (no training, no Lightning).

The default `python train.py` job until a trained aligner replaces it. It loads split
`data.split` of registry dataset `data.name` (`aligners.data.datasets`, in the registry's
source-target orientation), aligns every pair on the diagonal, writes `alignments.txt`
(Pharaoh, 0-based) and `metrics.json` (`{split: {"micro.aer": ..., "macro.f1": ..., ...}}`,
through `aligners.metrics.write_metrics_json`) into Hydra's output dir, and prints the AER
table. `evaluate` is the same job (there is no checkpoint: `ckpt_path` is refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig

from aligners.config_checks import BOOL, Rule, from_config, one_of, setting
from aligners.data.pharaoh import link_line
from aligners.errors import AlignersInputError
from aligners.metrics import evaluate_alignments, format_report, write_metrics_json
from aligners.outputs import write_lines

__all__ = ["DiagonalConfig", "GoldData", "diagonal_alignment", "flatten_numbers",
           "registry_split", "train", "evaluate"]


@dataclass
class DiagonalConfig:
    """The `model` section (configs/model/diagonal.yaml): the diagonal aligner has no
    parameters; `name` says which model the file selects."""

    name: str = setting("diagonal", one_of("diagonal"))


@dataclass
class GoldData:
    """The `data` section: split `split` of registry dataset `name`
    (`aligners.data.datasets`); `lenient`: drop (count, warn about) gold links outside their
    sentence instead of failing."""

    name: str = setting(rule=Rule("str"))
    split: str | None = setting(None, Rule("str", nullable=True))  # None: the registry's default
    lenient: bool = setting(False, BOOL)


def flatten_numbers(tree: dict, prefix: str = "", *, sep: str = ".",
                    finite: bool = True) -> dict[str, float]:
    """`{"micro": {"aer": x}}` -> `{"micro.aer": x}` (names joined by `sep`): the numbers of a
    nested report (bools never; only the finite ones with `finite`)."""
    import math

    out: dict[str, float] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten_numbers(value, f"{name}{sep}", sep=sep, finite=finite))
        elif isinstance(value, int | float) and not isinstance(value, bool) \
                and (math.isfinite(value) or not finite):
            out[name] = value
    return out


def diagonal_alignment(*, src_len: int, tgt_len: int) -> set[tuple[int, int]]:
    """Link each target word j to source word floor((j + 1/2) * I / J); I, J = lengths.

    Shapes: I = src_len, J = tgt_len; returns J links (none when I or J is 0).
    Cost: O(J).
    """
    if src_len <= 0 or tgt_len <= 0:
        return set()
    return {(min(src_len - 1, (2 * j + 1) * src_len // (2 * tgt_len)), j) for j in range(tgt_len)}


def registry_split(cfg: DictConfig, name: str, split: str | None, **kw) -> list:
    """Split `split` of registry dataset `name` (`aligners.data.datasets.load(..., **kw)`);
    `cfg.paths.data_root`, when set, is the data root."""
    from aligners.data.datasets import load
    from aligners.data.paths import data_root_set_to

    with data_root_set_to((cfg.get("paths") or {}).get("data_root")):
        return load(name, split, **kw)


def evaluate(cfg: DictConfig) -> dict:
    """Align `cfg.data`'s pairs on the diagonal and score them; returns `metrics.json`'s dict."""
    from_config(DiagonalConfig, cfg.get("model"), "model")  # nothing else to set
    d = from_config(GoldData, cfg.data, "data")
    pairs = registry_split(cfg, d.name, d.split, lenient=d.lenient)
    if not pairs or getattr(pairs[0], "alignment", None) is None:  # e.g. MSRP: labels only
        raise AlignersInputError(f"dataset {d.name!r} has no gold alignments to score against")
    pred = [diagonal_alignment(src_len=len(p.src), tgt_len=len(p.tgt)) for p in pairs]
    report = evaluate_alignments([p.alignment for p in pairs], pred,
                                 src_tokens=[p.src for p in pairs],
                                 tgt_tokens=[p.tgt for p in pairs])
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_lines(str(out_dir / "alignments.txt"), (link_line(sorted(al)) for al in pred))
    split = str(d.split or "test")
    write_metrics_json(out_dir / "metrics.json", {split: flatten_numbers(report.to_dict())})
    print(f"diagonal baseline on {d.name} {d.split} ({report.pairs} pairs)")
    print(format_report(report))
    print(f"wrote {out_dir / 'alignments.txt'} and {out_dir / 'metrics.json'}")
    return {"task": "baseline", "model": "diagonal", "data": d.name, "split": d.split,
            **report.to_dict()}


train = evaluate  # nothing to train: the diagonal aligner has no parameters
