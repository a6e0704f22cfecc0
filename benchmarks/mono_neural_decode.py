"""Decode throughput of saved neural semi-CRF aligners side by side (pairs/s), and per part.

    python benchmarks/mono_neural_decode.py --model RUN/model [RUN2/model ...] \
        [--peer-kind token] --data multimwa-wiki --split test --limit 300 --threads 1,2 \
        [--combine none,posterior --threshold 0.6] [--rounds 2] [--parts 200] \
        [--device cuda] [--encoder-precision fp32|bf16|int8]

For each round, thread count, model and combine option, on the same pairs in the same
process: end to end `MonoAligner.align` with cold caches (sparse features + encoder + scorer +
Viterbi), then again with warm caches (word / WordNet / encoder memos filled: the scorer and
lattice alone, plus cache look-ups; a fine-tuned encoder is never memoised, so it runs again).
`--combine posterior` decodes both saved directions and combines them (`--threshold`);
models with one direction skip the combined options. Models run in the given order in even
rounds and reversed in odd ones. `*_per_cpu_s`: pairs per process CPU second (all threads
summed). `--peer RUN2/model` times a saved token / phrase CRF; `--peer-kind token|phrase` an
untrained one (zero weights: decoding cost does not depend on the weights).
`--parts N` (neural models, one thread, first N pairs, s2t direction) first times the parts
alone: the encoder at the decoding precision and encoder batch, the sparse features cold and
warm, and the scorer + Viterbi on examples with vectors attached (CPU and wall seconds).
Prints one JSON line per measurement.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aligners.models.mono.aligner as mono  # noqa: E402
from aligners.data.datasets import load  # noqa: E402
from aligners.export import load as load_model  # noqa: E402
from aligners.features.string_sim import clear_caches  # noqa: E402


def _rate(aligner, pairs, batch, precision=None, combine="none", threshold=0.5):
    kw = {} if precision is None or aligner.kind != "neural" else {
        "encoder_precision": precision}
    if combine != "none":
        kw.update(combine=combine, threshold=threshold)
    c0, t0 = time.process_time(), time.perf_counter()
    aligner.align(pairs, batch_size=batch, **kw)
    return len(pairs) / (time.perf_counter() - t0), len(pairs) / (time.process_time() - c0)


def _seconds(fn):
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    return round(time.process_time() - c0, 3), round(time.perf_counter() - w0, 3)


def parts(path: str, aligner, pairs, batch: int, precision: str | None) -> dict:
    """CPU / wall seconds of the encoder, the sparse features (cold, warm) and the scorer +
    Viterbi of the s2t model on `pairs`, one thread."""
    from aligners.features.monolingual import featurize_states
    from aligners.models.mono.neural import DECODE_ENCODER_BATCH

    m = aligner.models[aligner.directions[0]]
    mono.set_encoder_precision(m, precision or aligner.encoder_precision)
    m.eval()
    mono.featurise(pairs[:2], m, decoding=True)  # warm-up: weights paged in, first kernels
    with torch.no_grad():
        encoder = _seconds(lambda: m._encode(pairs, frozen=False,
                                             batch_size=DECODE_ENCODER_BATCH))
    clear_caches()
    Ls, Lt = m.max_src_len, m.max_tgt_len

    def feats():
        return [featurize_states(p.src, p.tgt, max_src_len=Ls, max_tgt_len=Lt) for p in pairs]

    cold, warm = _seconds(feats), _seconds(feats)
    ex = mono.featurise(pairs, m, decoding=True)
    scorer = _seconds(lambda: mono.predict(m, ex, batch_size=batch))
    return {"model": path, "parts_pairs": len(pairs), "threads": 1,
            "precision": getattr(m.encoder, "precision", None),
            "layers": getattr(m.encoder, "layers", None),
            "encoder_cpu_s": encoder[0], "encoder_wall_s": encoder[1],
            "features_cold_cpu_s": cold[0], "features_warm_cpu_s": warm[0],
            "scorer_viterbi_cpu_s": scorer[0], "scorer_viterbi_wall_s": scorer[1]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, nargs="+", help="neural model folder(s)")
    ap.add_argument("--peer", default=None, help="a token / phrase CRF model folder")
    ap.add_argument("--peer-kind", choices=("token", "phrase"), default=None,
                    help="an untrained token / phrase CRF as the peer")
    ap.add_argument("--data", default="multimwa-wiki")
    ap.add_argument("--split", default="test")
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", default="2", help="torch threads, e.g. 1,2")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--combine", default="none",
                    help="comma list of none | union | intersect | grow-diag | posterior")
    ap.add_argument("--threshold", type=float, default=0.6, help="combine posterior threshold")
    ap.add_argument("--parts", type=int, default=0,
                    help="per-part times on the first N pairs first (0: none)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--encoder-precision", default=None, choices=("fp32", "bf16", "int8"),
                    help="the neural encoder's (default: the aligner's)")
    args = ap.parse_args(argv)
    try:
        threads = [int(t) for t in args.threads.split(",")]
    except ValueError:
        ap.error(f"--threads must be a comma list of integers, got {args.threads!r}")
    combines = args.combine.split(",")
    pairs = load(args.data, args.split)[: args.limit]
    todo = list(args.model) + ([args.peer] if args.peer else [])
    todo += [f"untrained-{args.peer_kind}"] if args.peer_kind else []
    aligners = {}
    for path in todo:
        if path.startswith("untrained-"):
            kind = path.split("-", 1)[1]
            aligners[path] = mono.MonoAligner({"s2t": mono.build_model(kind=kind)}, kind=kind)
        else:
            aligners[path] = load_model(path)
        aligners[path] = aligners[path].to(args.device)
    if args.parts:
        torch.set_num_threads(1)
        for path, al in aligners.items():
            if al.kind == "neural":
                print(json.dumps(parts(path, al, pairs[: args.parts],
                                       args.batch or mono.decode_batch(al.kind),
                                       args.encoder_precision)), flush=True)
    for r in range(args.rounds):
        for t in threads:
            torch.set_num_threads(t)
            for path in (todo if r % 2 == 0 else todo[::-1]):
                aligner = aligners[path]
                for combine in combines:
                    if combine != "none" and len(aligner.directions) < 2:
                        continue
                    clear_caches()
                    cold = _rate(aligner, pairs, args.batch, args.encoder_precision, combine,
                                 args.threshold)
                    warm = _rate(aligner, pairs, args.batch, args.encoder_precision, combine,
                                 args.threshold)
                    enc = getattr(aligner.models[aligner.directions[0]], "encoder", None)
                    print(json.dumps({
                        "round": r, "model": path, "kind": aligner.kind,
                        "layers": getattr(enc, "layers", None), "combine": combine,
                        "pairs": len(pairs), "device": args.device, "threads": t,
                        "cold_pairs_per_s": round(cold[0], 1),
                        "warm_pairs_per_s": round(warm[0], 1),
                        "cold_pairs_per_cpu_s": round(cold[1], 1),
                        "warm_pairs_per_cpu_s": round(warm[1], 1)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
