"""`task: baseline`: the diagonal aligner scored on a gold test set (no training, no Lightning).

The default `python train.py` job until a trained aligner replaces it. It reads the data
config (`data.src_text`, `data.tgt_text`, `data.gold`, relative to the data root), aligns
every pair on the diagonal, writes `alignments.txt` (Pharaoh, 0-based) and `metrics.json`
into Hydra's output dir, and prints the AER table.
"""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import DictConfig

from aligners.data.paths import data_root
from aligners.metrics import evaluate_alignments, format_report

__all__ = ["diagonal_alignment", "train", "evaluate"]


def diagonal_alignment(*, src_len: int, tgt_len: int) -> set[tuple[int, int]]:
    """Link each target word j to source word floor((j + 1/2) * I / J); I, J = lengths.

    Shapes: I = src_len, J = tgt_len; returns J links (none when I or J is 0).
    Cost: O(J).
    """
    if src_len <= 0 or tgt_len <= 0:
        return set()
    return {(min(src_len - 1, (2 * j + 1) * src_len // (2 * tgt_len)), j) for j in range(tgt_len)}


def _root(cfg: DictConfig) -> Path:
    configured = cfg.get("paths", {}).get("data_root")
    return Path(configured) if configured else data_root()


def evaluate(cfg: DictConfig) -> dict:
    """Align `cfg.data`'s pairs on the diagonal and score them; returns `metrics.json`'s dict."""
    from aligners.data.gold import read_alignment_file, read_snum_text

    folder = _root(cfg) / cfg.data.folder
    src = read_snum_text(folder / cfg.data.src_text)
    tgt = read_snum_text(folder / cfg.data.tgt_text)
    snums = [s for s, _ in src]
    src_tokens = [t for _, t in src]
    tgt_tokens = [t for _, t in tgt]
    gold = read_alignment_file(
        folder / cfg.data.gold,
        fmt=cfg.data.get("gold_format", "auto"),
        snums=snums,
        src_lengths=[len(s) for s in src_tokens],
        tgt_lengths=[len(t) for t in tgt_tokens],
    )
    pred = [
        diagonal_alignment(src_len=len(s), tgt_len=len(t))
        for s, t in zip(src_tokens, tgt_tokens, strict=True)
    ]
    report = evaluate_alignments(gold, pred, src_tokens=src_tokens, tgt_tokens=tgt_tokens)
    out_dir = Path(cfg.paths.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "alignments.txt", "w", encoding="utf-8") as f:
        for links in pred:
            f.write(" ".join(f"{i}-{j}" for i, j in sorted(links)) + "\n")
    metrics = {"task": "baseline", "model": "diagonal", "data": cfg.data.name, **report.to_dict()}
    with open(out_dir / "metrics.json", "w", encoding="utf-8") as f:
        json.dump(metrics, f, indent=2)
    print(f"diagonal baseline on {cfg.data.name} ({report.pairs} pairs)")
    print(format_report(report))
    print(f"wrote {out_dir / 'alignments.txt'} and {out_dir / 'metrics.json'}")
    return metrics


def train(cfg: DictConfig) -> dict:
    """Nothing to train: the diagonal aligner has no parameters; runs `evaluate`."""
    return evaluate(cfg)
