"""Choose how to combine the two directions of a monolingual aligner, on a dev split.

    python benchmarks/mono_combine_sweep.py --model RUN/model --data multimwa-wiki \
        --split dev [--thresholds 0.1,...,0.9] [--batch 16] [--check] --out OUT.json
    (or --split train --select-last 100: the last 100 training pairs a run held out)

The model folder must hold both directions (`training.directions=[s2t,t2s]`). In one
process the split is decoded once per direction by Viterbi (`MonoAligner.align(direction=)`)
and once per direction for the link posteriors (`MonoAligner.posteriors`), with the aligner's
default encoder precision; the options are then scored from those outputs with the library's
own combination code (`aligners.models.mono.combine`): s2t, t2s, union, intersect,
grow-diag (of the Viterbi links) and posterior (mean of the two directions' link posteriors
> T) at each threshold. The rule is fixed: the highest micro F1 wins (ties: the earlier
option in that order). `--check` decodes the chosen option again through
`MonoAligner.align(combine=...)` and asserts the same links. Never run it on a test split to
choose. Writes OUT.json (per option a flat `aligners.metrics` row, the choice, the seconds)
and prints a table (micro P/R/F1, non-identical micro P/R/F1, in %).
"""

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aligners.data.datasets import load as load_data  # noqa: E402
from aligners.errors import AlignersInputError  # noqa: E402
from aligners.export import load  # noqa: E402
from aligners.metrics import evaluate_alignments  # noqa: E402
from aligners.models.mono.combine import combine_links, combine_posteriors  # noqa: E402
from aligners.training.monolingual import flatten_report  # noqa: E402

GRID = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
NI = "breakdown/non-identical/micro/"


def _score(pairs, links) -> dict:
    rep = evaluate_alignments([p.alignment for p in pairs], links,
                              src_tokens=[p.src for p in pairs], tgt_tokens=[p.tgt for p in pairs])
    return flatten_report(rep.to_dict())


def options(vit: dict, post: dict, thresholds) -> dict[str, list[set]]:
    """Option name -> per-pair link sets, from the two directions' Viterbi link sets and
    (I, J) posterior matrices (source-target order)."""
    out = {"s2t": vit["s2t"], "t2s": vit["t2s"]}
    for how in ("union", "intersect", "grow-diag"):
        out[how] = [combine_links(a, b, how) for a, b in zip(vit["s2t"], vit["t2s"])]
    means = [combine_posteriors(a, b) for a, b in zip(post["s2t"], post["t2s"])]
    for t in thresholds:
        out[f"posterior@{t}"] = [{(i, j) for i, j in (m > t).nonzero().tolist()} for m in means]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="model folder with s2t and t2s")
    ap.add_argument("--data", default="multimwa-wiki")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--thresholds", default=",".join(map(str, GRID)))
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--select-last", type=int, default=None, metavar="N",
                    help="choose on the last N pairs of --split train instead (the pairs a "
                         "run with training.select=N held out of training)")
    ap.add_argument("--limit", type=int, default=None, help="first N pairs (smoke runs)")
    ap.add_argument("--check", action="store_true",
                    help="re-decode the chosen option with align(combine=) and compare")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.split == "test":
        raise SystemExit("choose on a dev split, not test")
    torch.set_num_threads(1)
    try:
        aligner = load(args.model)
        pairs = load_data(args.data, args.split)
    except AlignersInputError as e:  # unknown dataset / split, not a model folder
        raise SystemExit(f"error: {e}") from None
    if args.select_last:
        if args.split != "train":
            raise SystemExit("--select-last takes the last N pairs of --split train")
        pairs = pairs[-args.select_last:]
    pairs = pairs[: args.limit]
    thresholds = [float(x) for x in args.thresholds.split(",")]
    vit, post, secs = {}, {}, {}
    for d in ("s2t", "t2s"):
        t0 = time.perf_counter()
        vit[d] = [set(o[1]) for o in aligner.align(pairs, direction=d, batch_size=args.batch)]
        t1 = time.perf_counter()
        post[d] = aligner.posteriors(pairs, direction=d, batch_size=args.batch)
        secs[d] = {"viterbi": round(t1 - t0, 2), "posteriors": round(time.perf_counter() - t1, 2)}
        print(f"{d}: {len(pairs)} pairs, seconds {secs[d]}", flush=True)
    rows = {name: _score(pairs, links) for name, links in options(vit, post, thresholds).items()}
    chosen = max(rows, key=lambda n: (rows[n]["micro/f1"], -list(rows).index(n)))
    res = {"model": args.model, "data": args.data, "split": args.split, "pairs": len(pairs),
           "select_last": args.select_last,
           "rule": "highest micro F1", "chosen": chosen, "seconds": secs, "options": rows}
    print(f"{'option':16s} {'P':>6s} {'R':>6s} {'F1':>6s} | {'Pn':>5s} {'Rn':>5s} {'F1n':>5s}")
    for name, r in rows.items():
        print(f"{name:16s} {100 * r['micro/precision']:6.2f} {100 * r['micro/recall']:6.2f} "
              f"{100 * r['micro/f1']:6.2f} | {100 * r[NI + 'precision']:5.1f} "
              f"{100 * r[NI + 'recall']:5.1f} {100 * r[NI + 'f1']:5.1f}")
    print(f"chosen by micro F1: {chosen}")
    if args.check and chosen not in ("s2t", "t2s"):
        how, _, t = chosen.partition("@")
        out = aligner.align(pairs, combine=how, threshold=float(t or 0.5), batch_size=args.batch)
        same = [set(o[1]) for o in out] == options(vit, post, thresholds)[chosen]
        res["check_same_links"] = same
        print(f"align(combine={how!r}) gives the same links: {same}")
        if not same:
            raise SystemExit("the library path and the sweep disagree")
    Path(args.out).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
