"""Print the Table 3/4-style markdown rows of finished monolingual runs.

    python benchmarks/mono_table.py outputs/mono/*/metrics.json
Macro P/R/F1 (jacana's averaging, as Yao et al. 2013 report) and exact match, with the
identical/non-identical and token/phrase breakdowns (macro), per direction.
"""

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


if __name__ == "__main__":
    main(sys.argv[1:])
