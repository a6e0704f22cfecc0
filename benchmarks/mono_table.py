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
        raise SystemExit(f"mono_table: error: {path}: cannot read metrics.json ({err})") \
            from None
    name = Path(path).parent.name
    rows = [(name, k, v) for k, v in m.items() if isinstance(v, dict) and "macro/f1" in v]
    if not rows:
        raise SystemExit(f"mono_table: error: {path}: no monolingual scores (expected rows "
                         "like 'test/s2t' with 'macro/f1')")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("metrics", nargs="+", help="metrics.json files of monolingual runs")
    args = ap.parse_args(argv)
    print("| run | split/dir | P | R | F1 | E | Pi/Pn | Ri/Rn | F1i/F1n | F1t/F1p | micro F1 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for path in args.metrics:
        for name, split, r in _rows(path):
            def two(key, a, b, r=r):
                ka, kb = f"breakdown/{a}/macro/{key}", f"breakdown/{b}/macro/{key}"
                if ka not in r or kb not in r:
                    return "-"
                return f"{_pct(r[ka])}/{_pct(r[kb])}"
            print(f"| {name} | {split} | {_pct(r['macro/precision'])} | "
                  f"{_pct(r['macro/recall'])} | {_pct(r['macro/f1'])} | "
                  f"{_pct(r['exact_match'])} | "
                  f"{two('precision', 'identical', 'non-identical')} | "
                  f"{two('recall', 'identical', 'non-identical')} | "
                  f"{two('f1', 'identical', 'non-identical')} | {two('f1', 'token', 'phrase')} | "
                  f"{_pct(r['micro/f1'])} |")


def _cli(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("metrics", nargs="+", help="metrics.json files of finished monolingual runs")
    args = ap.parse_args(argv)
    try:
        main(args.metrics)
    except (OSError, ValueError, KeyError, TypeError) as err:
        print(f"{ap.prog}: error: cannot read the monolingual metrics ({type(err).__name__}: "
              f"{err}); expected metrics.json files of `task: monolingual` runs",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
