"""Decode throughput of the monolingual aligners (pairs/s, batched, CPU threads as given).

    python benchmarks/mono_decode.py --data msr06 --threads 2 [--model RUN/model]

Times, on the test split: featurisation (cold and warm word / word-pair / WordNet caches;
featurisation always runs on one intra-op thread), lattice decoding
alone, and end to end (warm features + decode), for the token CRF and the phrasal CRF
(Ls = Lt = 3), medians of --repeats runs. The peer figure is the 65 pairs/s reported for the
Java jacana aligner (Yao et al. 2013); it cannot be run here (no JVM / jacana jar offline).
Weights are random unless --model is given (decoding cost does not depend on them).
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
from aligners.features.string_sim import clear_caches  # noqa: E402
from aligners.models.mono.aligner import build_model, featurise, predict  # noqa: E402


def _time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="msr06")
    ap.add_argument("--split", default="test")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--model", default=None, help="a trained model folder RUN/model (optional)")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    pairs = load(args.data, args.split)
    if args.limit:
        pairs = pairs[: args.limit]
    results = {"data": args.data, "pairs": len(pairs), "threads": args.threads,
               "batch": args.batch, "peer_jacana_pairs_per_s": 65}
    kinds = ["token", "phrase"] if args.model is None else [None]
    for kind in kinds:
        if kind is None:
            aligner = load_model(args.model)
            model, kind = aligner.models[aligner.directions[0]], aligner.kind
        else:
            model = build_model(kind=kind)
            torch.manual_seed(0)
            with torch.no_grad():
                for p in model.parameters():
                    p.normal_(0, 0.3)
        clear_caches()  # word, word-pair and WordNet look-ups
        t0 = time.perf_counter()
        examples = featurise(pairs, model)
        cold = time.perf_counter() - t0
        warm = _time(lambda m=model: featurise(pairs, m), args.repeats)
        dec = _time(lambda m=model, e=examples: predict(m, e, batch_size=args.batch),
                    args.repeats)
        results[kind] = {
            "featurise_cold_pairs_per_s": round(len(pairs) / cold, 1),
            "featurise_warm_pairs_per_s": round(len(pairs) / warm, 1),
            "decode_pairs_per_s": round(len(pairs) / dec, 1),
            "end_to_end_warm_pairs_per_s": round(len(pairs) / (warm + dec), 1),
            "decode_ratio_vs_jacana": round(len(pairs) / dec / 65, 1),
            "end_to_end_ratio_vs_jacana": round(len(pairs) / (warm + dec) / 65, 1),
        }
        print(kind, json.dumps(results[kind]))
    print(json.dumps(results))
    return results


if __name__ == "__main__":
    main()
