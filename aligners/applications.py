"""Alignment score as a one-feature classifier (Yao et al. 2013, section 5, Table 5).

The feature: a trained monolingual aligner's Viterbi score (the longer text as source)
normalised by a length. RTE (train RTE-1, RTE-2, RTE-3 dev; test RTE-3 test) and MSRP: the
normaliser and threshold with the best training accuracy; TREC QA (MAP / MRR on
test-less-than-40): the normaliser with the best MAP on dev-less-than-40.

    python -m aligners.applications --model RUN/model [--tasks rte msrp trecqa]
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence

import torch

__all__ = ["tokenize", "alignment_scores", "tune_threshold", "accuracy_prf",
           "mean_average_precision", "mean_reciprocal_rank", "run_rte", "run_msrp",
           "run_trecqa", "main"]

_TOKEN = re.compile(r"(?:[A-Za-z]\.){2,}|\w+(?=n't\b)|n't\b|'(?:s|re|ve|ll|d|m)\b"
                    r"|\w+(?:[-.,/]\w+)*|[^\w\s]")
NORMALISERS = ("src", "tgt", "both")


def tokenize(text: str) -> list[str]:
    """PTB-like tokens: words (with inner - . , / '), clitics ('s, n't, ...), punctuation."""
    return _TOKEN.findall(text)


def alignment_scores(model, pairs: Sequence[tuple[Sequence[str], Sequence[str]]], *,
                     batch_size: int = 64) -> dict[str, list[float]]:
    """Viterbi score of each (source, target) pair divided by I, by J and by I + J; `model`
    is a `MonoAligner` (its first direction decodes)."""
    from aligners.data.types import AlignedPair
    aligned = [AlignedPair(tuple(s) or ("<empty>",), tuple(t) or ("<empty>",))
               for s, t in pairs]
    d = "s2t" if "s2t" in model.models else "t2s"
    out = model.align(aligned, direction=d, batch_size=batch_size)
    raw = [o[2] * len(p.src if d == "s2t" else p.tgt) for o, p in zip(out, aligned)]
    return {"src": [r / len(p.src) for r, p in zip(raw, aligned)],
            "tgt": [r / len(p.tgt) for r, p in zip(raw, aligned)],
            "both": [r / (len(p.src) + len(p.tgt)) for r, p in zip(raw, aligned)]}


def accuracy_prf(scores: Sequence[float], labels: Sequence[int], threshold: float):
    """(accuracy, precision, recall) of predicting 1 when score > threshold."""
    pred = [int(s > threshold) for s in scores]
    tp = sum(p and y for p, y in zip(pred, labels))
    acc = sum(p == y for p, y in zip(pred, labels)) / max(len(labels), 1)
    prec = tp / max(sum(pred), 1)
    rec = tp / max(sum(labels), 1)
    return acc, prec, rec


def tune_threshold(scores: Sequence[float], labels: Sequence[int]) -> tuple[float, float]:
    """Threshold with the best accuracy (midpoint between sorted scores): (threshold, acc)."""
    order = sorted(set(scores))
    cands = [order[0] - 1.0] + [(a + b) / 2 for a, b in zip(order, order[1:])] + [order[-1]]
    best = max(cands, key=lambda t: (accuracy_prf(scores, labels, t)[0], -abs(t)))
    return best, accuracy_prf(scores, labels, best)[0]


def mean_average_precision(rankings: Sequence[Sequence[int]]) -> float:
    """MAP over questions; each ranking is the 0/1 relevance list in ranked order."""
    aps = []
    for rel in rankings:
        hits, total = 0, 0.0
        for k, r in enumerate(rel, 1):
            if r:
                hits += 1
                total += hits / k
        aps.append(total / max(hits, 1))
    return sum(aps) / max(len(aps), 1)


def mean_reciprocal_rank(rankings: Sequence[Sequence[int]]) -> float:
    """MRR: mean over questions of 1 / rank of the first relevant item (0 if none)."""
    rr = [next((1 / k for k, r in enumerate(rel, 1) if r), 0.0) for rel in rankings]
    return sum(rr) / max(len(rr), 1)


def _classify(model, train, test, name: str) -> dict:
    tr = alignment_scores(model, [(tokenize(p.text1), tokenize(p.text2)) for p in train])
    te = alignment_scores(model, [(tokenize(p.text1), tokenize(p.text2)) for p in test])
    y_tr, y_te = [p.label for p in train], [p.label for p in test]
    fits = {n: tune_threshold(tr[n], y_tr) for n in NORMALISERS}
    norm = max(NORMALISERS, key=lambda n: fits[n][1])
    thr, train_acc = fits[norm]
    acc, prec, rec = accuracy_prf(te[norm], y_te, thr)
    res = {"task": name, "normaliser": norm, "threshold": thr, "train_accuracy": train_acc,
           "train_pairs": len(train), "test_pairs": len(test), "accuracy": acc,
           "precision": prec, "recall": rec}
    print(json.dumps(res))
    return res


def run_rte(model) -> dict:
    from aligners.data.datasets import load
    train = [p for name, split in [("rte1", "dev"), ("rte1", "test"), ("rte2", "dev"),
                                   ("rte2", "test"), ("rte3", "dev")] for p in load(name, split)]
    return _classify(model, train, load("rte3", "test"), "rte3")


def run_msrp(model) -> dict:
    from aligners.data.datasets import load
    return _classify(model, load("msrp", "train"), load("msrp", "test"), "msrp")


def _qa_rankings(model, questions):
    pairs, owner, rel = [], [], []
    for n, q in enumerate(questions):
        for r, sents in ((1, q.positives), (0, q.negatives)):
            for s in sents:
                pairs.append((s.tokens, q.question.tokens))
                owner.append(n)
                rel.append(r)
    asked = [[k for k in range(len(pairs)) if owner[k] == n] for n in range(len(questions))]
    out = {norm: [[rel[k] for k in sorted(ks, key=lambda k: (-sc[k], k))] for ks in asked]
           for norm, sc in alignment_scores(model, pairs).items()}
    return out, len(pairs)


def run_trecqa(model, *, split: str = "test-less-than-40",
               dev_split: str = "dev-less-than-40") -> dict:
    """MAP/MRR on `split`; the score normaliser is the one with the best MAP on `dev_split`."""
    from aligners.data.datasets import load
    dev, _ = _qa_rankings(model, [q for q in load("trecqa", dev_split) if q.usable])
    norm = max(NORMALISERS, key=lambda n: mean_average_precision(dev[n]))
    questions = [q for q in load("trecqa", split) if q.usable]
    test, n_pairs = _qa_rankings(model, questions)
    res = {"task": "trecqa", "split": split, "normaliser": norm,
           "dev_MAP": mean_average_precision(dev[norm]), "questions": len(questions),
           "pairs": n_pairs, "MAP": mean_average_precision(test[norm]),
           "MRR": mean_reciprocal_rank(test[norm])}
    print(json.dumps(res))
    return res


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a monolingual model folder (RUN/model)")
    ap.add_argument("--tasks", nargs="+", default=["rte", "msrp", "trecqa"],
                    choices=("rte", "msrp", "trecqa"))
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads (more than the cores: the cores, with a warning)")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    ap.add_argument("--seed", type=int, default=0,
                    help="torch seed (scoring is deterministic given the model; set for safety)")
    args = ap.parse_args(argv)
    from aligners.commands._device import thread_count
    from aligners.errors import AlignersInputError
    from aligners.export import load, read_config, resolve_model_folder
    from aligners.models.mono.aligner import KINDS
    from aligners.outputs import check_paths, write_lines

    threads = thread_count(args.threads, prog="aligners.applications")
    check_paths({"--model": args.model}, {"--out": args.out})  # before minutes of scoring
    folder = resolve_model_folder(args.model)
    kind = read_config(folder).get("kind")
    if kind not in KINDS.values():  # one aligner (MonoAligner), not an ensemble
        raise AlignersInputError(f"--model: a {kind!r} model; expected a monolingual model "
                                 f"folder (kind {', '.join(KINDS.values())})", path=args.model)
    torch.set_num_threads(threads)
    torch.manual_seed(args.seed)
    model = load(folder)
    runners = {"rte": run_rte, "msrp": run_msrp, "trecqa": run_trecqa}
    results = {t: runners[t](model) for t in args.tasks}
    if args.out:
        write_lines(args.out, [json.dumps(results, indent=2)], flag="--out")
    return results


def _cli() -> int:
    """`python -m aligners.applications`: bad input (a missing or wrong-kind model, a data
    folder, an unwritable --out) is one line on stderr and exit status 2, Ctrl-C one line
    and 130, never a traceback."""
    import sys

    from aligners.errors import AlignersInputError
    try:
        main()
    except AlignersInputError as err:
        print(f"aligners.applications: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("aligners.applications: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(_cli())
