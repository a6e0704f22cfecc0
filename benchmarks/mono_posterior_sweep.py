"""Viterbi vs posterior (MBR) decoding of a saved monolingual CRF run, threshold chosen on dev.

    python benchmarks/mono_posterior_sweep.py --run RUN [--select dev|N] [--dev-split dev] \
        [--thresholds 0.05,0.1,...] --out OUT.json

RUN is a training run folder (its `.hydra/config.yaml` gives the data settings and its
`model/` folder the model). Per split, in one process: the pairs are featurised once, then
decoded by Viterbi (`predict`) and by the link posteriors (`posteriors`; the links of
`--decode posterior --threshold T` are exactly those with posterior > T), each timed. The
selection pairs are the run's own (`training.select`: the dev split, or the last N training
pairs held out of training; `--select` overrides it, e.g. for a run trained without one); the
threshold is chosen there by micro F1 (ties: the one closest to 0.5), never on a test split,
and the non-identical-F1-optimal dev threshold is recorded too. The evaluation splits are the
run's (test + data.extra_tests), the dev split excluded. Writes OUT.json: per split the
Viterbi and per-threshold metrics (flat `aligners.metrics` rows), the chosen thresholds and
the decode times; prints a summary table.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from omegaconf import OmegaConf, open_dict

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aligners.export import load  # noqa: E402
from aligners.metrics import evaluate_alignments  # noqa: E402
from aligners.models.mono.aligner import featurise, posteriors, predict  # noqa: E402
from aligners.training.monolingual import (  # noqa: E402
    _embedder,
    _eval_splits,
    _select_pairs,
    flatten_report,
)

GRID = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8,
        0.85, 0.9, 0.95]
KEYS = {"P": "micro/precision", "R": "micro/recall", "F1": "micro/f1", "mF1": "macro/f1",
        "F1i": "breakdown/identical/micro/f1", "F1n": "breakdown/non-identical/micro/f1",
        "Pn": "breakdown/non-identical/micro/precision",
        "Rn": "breakdown/non-identical/micro/recall",
        "mF1i": "breakdown/identical/macro/f1", "mF1n": "breakdown/non-identical/macro/f1",
        "F1t": "breakdown/token/micro/f1", "F1p": "breakdown/phrase/micro/f1",
        "mF1t": "breakdown/token/macro/f1", "mF1p": "breakdown/phrase/macro/f1",
        "E": "exact_match"}


def _score(pairs, links) -> dict:
    rep = evaluate_alignments([p.alignment for p in pairs], links,
                              src_tokens=[p.src for p in pairs], tgt_tokens=[p.tgt for p in pairs])
    return flatten_report(rep.to_dict())


def _short(row: dict) -> dict:
    return {k: round(100 * row[v], 2) if k != "E" else round(100 * row[v], 1)
            for k, v in KEYS.items() if v in row}


def _decode(model, pairs, embedder, batch, thresholds):
    t0 = time.perf_counter()
    examples = featurise(pairs, model, embedder=embedder)
    t1 = time.perf_counter()
    vit = predict(model, examples, batch_size=batch)
    t2 = time.perf_counter()
    post = posteriors(model, examples, batch_size=batch)
    t3 = time.perf_counter()
    res = {"viterbi": _score(pairs, [set(o[1]) for o in vit]), "posterior": {},
           "seconds": {"features": round(t1 - t0, 2), "viterbi": round(t2 - t1, 2),
                       "posterior": round(t3 - t2, 2)}, "pairs": len(pairs)}
    for t in thresholds:
        links = [{(i, j) for i, j in (p > t).nonzero().tolist()} for p in post]
        res["posterior"][str(t)] = _score(pairs, links)
    return res, post


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, help="training run folder (has model/, .hydra/)")
    ap.add_argument("--select", default=None,
                    help="override training.select: dev or N (last N training pairs)")
    ap.add_argument("--dev-split", default=None, help="override data.dev_split")
    ap.add_argument("--thresholds", default=",".join(map(str, GRID)))
    ap.add_argument("--batch", type=int, default=None, help="decode batch (default: the run's)")
    ap.add_argument("--limit", type=int, default=None, help="first N pairs of each split")
    ap.add_argument("--save-posteriors", default=None, help="torch.save the matrices here")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    run = Path(args.run)
    cfg = OmegaConf.load(run / ".hydra" / "config.yaml")
    with open_dict(cfg):
        if args.select is not None:
            cfg.training.select = args.select if args.select == "dev" else int(args.select)
        if args.dev_split is not None:
            cfg.data.dev_split = args.dev_split
    thresholds = [float(x) for x in args.thresholds.split(",")]
    aligner = load(run / "model")
    model = aligner.models[aligner.directions[0]]
    batch = args.batch or int(cfg.training.get("decode_batch", 64))
    embedder = _embedder(cfg)
    select = _select_pairs(cfg)
    if not select:
        raise SystemExit("no selection pairs: give --select dev (with --dev-split) or N")
    splits = {"select": select}
    splits.update({k: v for k, v in _eval_splits(cfg).items() if k != "dev"})
    out = {"run": str(run), "direction": aligner.directions[0], "select": str(
        cfg.training.select), "splits": {}}
    saved = {}
    for name, pairs in splits.items():
        pairs = pairs[: args.limit] if args.limit else pairs
        res, post = _decode(model, pairs, embedder, batch, thresholds)
        out["splits"][name] = res
        saved[name] = post
        print(f"{name}: {len(pairs)} pairs, seconds {res['seconds']}", flush=True)
    dev = out["splits"]["select"]["posterior"]
    def best(key):  # noqa: E306
        return max(thresholds, key=lambda t: (dev[str(t)][key], -abs(t - 0.5)))
    out["chosen"] = best("micro/f1")
    out["chosen_nonident"] = best("breakdown/non-identical/micro/f1")
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    if args.save_posteriors:
        torch.save(saved, args.save_posteriors)
    print(f"chosen on the selection pairs by micro F1: {out['chosen']}; by non-identical "
          f"micro F1: {out['chosen_nonident']}")
    print("dev sweep (threshold: micro F1 / non-ident micro F1):",
          " ".join(f"{t}:{100 * dev[str(t)]['micro/f1']:.2f}/"
                   f"{100 * dev[str(t)]['breakdown/non-identical/micro/f1']:.1f}"
                   for t in thresholds))
    for name, res in out["splits"].items():
        print(f"{name} viterbi            {_short(res['viterbi'])}")
        for lab, t in (("chosen", out["chosen"]), ("nonident-opt", out["chosen_nonident"])):
            print(f"{name} posterior {lab} {t} {_short(res['posterior'][str(t)])}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
