"""Encoder inference precision of a saved neural semi-CRF aligner: accuracy and speed side by side.

    python benchmarks/mono_neural_precision.py --model RUN/model --data multimwa-wiki \
        --split dev --precisions fp32,bf16,int8 [--limit N] [--threads 1] [--rounds 2]

Decodes the same pairs with `MonoAligner.align(encoder_precision=P)` for each precision P,
in one process, the precisions interleaved for `--rounds` rounds (the sparse-feature memos
are warmed by one untimed fp32 decode first, so every timed decode does the same
featurisation work; a fine-tuned encoder is never memoised, a frozen one's memo is cleared
before each timed decode). Prints one JSON line per precision: micro P/R/F1, non-identical
micro F1, the number of pairs whose links differ from fp32's, and the median pairs/s over the
rounds (end to end: encoder + sparse features from warm memos + scorer + Viterbi).
Choose a precision on a dev split only.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aligners.data.datasets import load  # noqa: E402
from aligners.export import load as load_model  # noqa: E402
from aligners.metrics import evaluate_alignments  # noqa: E402


def _clear_encoder_memo(aligner) -> None:
    for m in aligner.models.values():
        enc = m.__dict__.get("encoder")
        if enc is not None:
            enc._cache.clear()
        memo = getattr(m, "_pair_memo", None)
        if memo is not None:
            memo._cache.clear()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", default="multimwa-wiki")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--precisions", default="fp32,bf16,int8")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    pairs = load(args.data, args.split)[: args.limit]
    aligner = load_model(args.model)
    aligner.align(pairs, batch_size=args.batch, encoder_precision="fp32")  # warm sparse memos
    precisions = args.precisions.split(",")
    rates = {p: [] for p in precisions}
    links = {}
    for _ in range(args.rounds):
        for p in precisions:
            _clear_encoder_memo(aligner)
            t0 = time.perf_counter()
            out = aligner.align(pairs, batch_size=args.batch, encoder_precision=p)
            rates[p].append(len(pairs) / (time.perf_counter() - t0))
            links[p] = [set(o[1]) for o in out]
    golds = [p.alignment for p in pairs]
    for p in precisions:
        rep = evaluate_alignments(golds, links[p], src_tokens=[x.src for x in pairs],
                                  tgt_tokens=[x.tgt for x in pairs]).to_dict()
        micro = rep["micro"]
        nonident = rep["breakdown"]["non-identical"]["micro"]
        ref = links.get("fp32")
        print(json.dumps({
            "precision": p, "pairs": len(pairs), "threads": args.threads,
            "micro_p": round(100 * micro["precision"], 2),
            "micro_r": round(100 * micro["recall"], 2),
            "micro_f1": round(100 * micro["f1"], 2),
            "nonident_f1": round(100 * nonident["f1"], 2),
            "pairs_changed_vs_fp32": None if ref is None else sum(
                a != b for a, b in zip(links[p], ref)),
            "pairs_per_s": round(statistics.median(rates[p]), 1),
            "pairs_per_s_rounds": [round(r, 1) for r in rates[p]]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
