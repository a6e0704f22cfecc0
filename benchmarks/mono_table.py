"""Print the Table 3/4-style markdown rows of finished monolingual runs.

    python benchmarks/mono_table.py RUN/metrics.json [RUN2/metrics.json ...]

Macro P/R/F1 (jacana's averaging, as Yao et al. 2013 report) and exact match, with the
identical/non-identical and token/phrase breakdowns (macro), per split and direction. Reads
the one metrics.json schema (split/direction -> flat metric names, `aligners.metrics.
write_metrics_json`).
"""

import argparse
import json
import sys
from pathlib import Path


def _pct(x):
    return f"{100 * x:.1f}"


def _rows(path: str):
    """(run name, split/direction, flat metrics) of one metrics.json; a file that is not
    the one schema is a clear error."""
    try:
        m = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: cannot read metrics.json ({err})") from None
    name = Path(path).parent.name
    rows = [(name, k, v) for k, v in m.items() if isinstance(v, dict) and "macro/f1" in v]
    if not rows:
        raise ValueError(f"{path}: no monolingual scores (expected rows like 'test/s2t' "
                         "with 'macro/f1', as `task: monolingual` runs write)")
    return rows


def _pair(r: dict, key: str, a: str, b: str) -> str:
    """`a/b` macro `key` of two breakdown classes, or '-' when the run has none."""
    ka, kb = f"breakdown/{a}/macro/{key}", f"breakdown/{b}/macro/{key}"
    return f"{_pct(r[ka])}/{_pct(r[kb])}" if ka in r and kb in r else "-"


def _table(paths) -> None:
    rows = [row for path in paths for row in _rows(path)]  # all read before printing
    print("| run | split/dir | P | R | F1 | E | Pi/Pn | Ri/Rn | F1i/F1n | F1t/F1p | micro F1 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, split, r in rows:
        print(f"| {name} | {split} | {_pct(r['macro/precision'])} | "
              f"{_pct(r['macro/recall'])} | {_pct(r['macro/f1'])} | "
              f"{_pct(r['exact_match'])} | "
              f"{_pair(r, 'precision', 'identical', 'non-identical')} | "
              f"{_pair(r, 'recall', 'identical', 'non-identical')} | "
              f"{_pair(r, 'f1', 'identical', 'non-identical')} | "
              f"{_pair(r, 'f1', 'token', 'phrase')} | {_pct(r['micro/f1'])} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("metrics", nargs="+", help="metrics.json files of finished monolingual runs")
    args = ap.parse_args(argv)
    try:
        _table(args.metrics)
    except ValueError as err:
        print(f"{ap.prog}: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
