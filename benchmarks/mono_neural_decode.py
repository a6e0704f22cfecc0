"""Decode throughput of a saved neural semi-CRF aligner next to a feature-based CRF (pairs/s).

    python benchmarks/mono_neural_decode.py --model RUN/model --peer-kind token \
        --data multimwa-wiki --split test --limit 300 --threads 2 [--device cuda] \
        [--encoder-precision fp32|bf16|int8]

For each model, on the same pairs in the same process: end to end `MonoAligner.align` with
cold caches (sparse features + encoder + scorer + Viterbi), then again with warm caches (word /
WordNet / encoder memos filled: the scorer and lattice alone, plus cache look-ups; a
fine-tuned encoder is never memoised, so it runs again). `*_per_cpu_s`: pairs per process CPU
second (all threads summed).
`--peer RUN2/model` times a saved token / phrase CRF; `--peer-kind token|phrase` an untrained
one (zero weights: decoding cost does not depend on the weights). Prints one JSON line per
model.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aligners.data.datasets import load  # noqa: E402
from aligners.export import load as load_model  # noqa: E402
from aligners.features.string_sim import clear_caches  # noqa: E402
from aligners.models.mono.aligner import MonoAligner, build_model  # noqa: E402


def _rate(aligner, pairs, batch, precision=None):
    kw = {} if precision is None or aligner.kind != "neural" else {
        "encoder_precision": precision}
    c0, t0 = time.process_time(), time.perf_counter()
    aligner.align(pairs, batch_size=batch, **kw)
    return len(pairs) / (time.perf_counter() - t0), len(pairs) / (time.process_time() - c0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="neural model folder")
    ap.add_argument("--peer", default=None, help="a token / phrase CRF model folder")
    ap.add_argument("--peer-kind", choices=("token", "phrase"), default=None,
                    help="an untrained token / phrase CRF as the peer")
    ap.add_argument("--data", default="multimwa-wiki")
    ap.add_argument("--split", default="test")
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--encoder-precision", default=None, choices=("fp32", "bf16", "int8"),
                    help="the neural encoder's (default: the aligner's)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    pairs = load(args.data, args.split)[: args.limit]
    todo = [args.model] + ([args.peer] if args.peer else [])
    todo += [f"untrained-{args.peer_kind}"] if args.peer_kind else []
    for path in todo:
        if path.startswith("untrained-"):
            kind = path.split("-", 1)[1]
            aligner = MonoAligner({"s2t": build_model(kind=kind)}, kind=kind).to(args.device)
        else:
            aligner = load_model(path).to(args.device)
        clear_caches()
        cold = _rate(aligner, pairs, args.batch, args.encoder_precision)
        warm = _rate(aligner, pairs, args.batch, args.encoder_precision)
        print(json.dumps({"model": path, "kind": aligner.kind, "pairs": len(pairs),
                          "device": args.device, "threads": args.threads,
                          "cold_pairs_per_s": round(cold[0], 1),
                          "warm_pairs_per_s": round(warm[0], 1),
                          "cold_pairs_per_cpu_s": round(cold[1], 1),
                          "warm_pairs_per_cpu_s": round(warm[1], 1)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
