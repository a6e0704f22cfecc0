"""Print the Table 3/4-style markdown rows of finished monolingual runs.

    python benchmarks/mono_table.py outputs/mono/*/metrics.json
Macro P/R/F1 (jacana's averaging, as Yao et al. 2013 report) and exact match, with the
identical/non-identical and token/phrase breakdowns (macro), per direction.
"""

import argparse
import json
import sys


def _pct(x):
    return f"{100 * x:.1f}"


def main(paths):
    print("| run | dir | P | R | F1 | E | Pi/Pn | Ri/Rn | F1i/F1n | F1t/F1p | micro F1 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for path in paths:
        m = json.load(open(path))
        name = path.split("/")[-2]
        for d, r in m["results"].items():
            ma, bd = r["macro"], r.get("breakdown", {})

            def two(key, a, b, bd=bd):
                if a not in bd or b not in bd:
                    return "-"
                return f"{_pct(bd[a]['macro'][key])}/{_pct(bd[b]['macro'][key])}"
            print(f"| {name} | {d} | {_pct(ma['precision'])} | {_pct(ma['recall'])} | "
                  f"{_pct(ma['f1'])} | {_pct(r['exact_match'])} | "
                  f"{two('precision', 'identical', 'non-identical')} | "
                  f"{two('recall', 'identical', 'non-identical')} | "
                  f"{two('f1', 'identical', 'non-identical')} | {two('f1', 'token', 'phrase')} | "
                  f"{_pct(r['micro']['f1'])} |")


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
