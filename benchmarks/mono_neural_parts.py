"""Ceiling of each part of neural semi-CRF decoding (pairs/s), measured on the same pairs.

    python benchmarks/mono_neural_parts.py --model RUN/model --data multimwa-wiki \
        --split test --limit 200 --threads 1,2 [--bf16]

Parts, each alone, for each thread count: `encoder` (MiniLM word vectors of the pairs'
distinct sentences, no memo, batched in length order: `MiniLMEmbedder.vectors`), `sparse_cold`
/ `sparse_warm` (the Yao et al. sparse features, `featurize_states`, after clearing every
word / WordNet memo, then again with them filled), `scorer_viterbi` (span-pair scorer + sparse
score + Viterbi on featurised examples whose vectors are attached: `predict`), and end to end
`MonoAligner.align` cold (all memos cleared) and warm, with the sparse features and without
them (`_nosparse`: `featurize_states` replaced by all-zero tensors of the same shapes, so no
word / WordNet look-ups run; the outputs are then not the trained model's, only the speed of
an aligner without sparse featurisation is meant). `--bf16`: the encoder alone under CPU bf16
autocast as well (different vectors: a speed ceiling only). Prints one JSON line per setting:
pairs per wall second, and pairs per process CPU second (`*_per_cpu_s`: all threads summed;
on a loaded machine the 1-thread CPU figure is the better estimate of an idle core).
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
from aligners.features.monolingual import (  # noqa: E402
    NULL_FEATURES,
    feature_names,
    featurize_states,
)
from aligners.features.string_sim import clear_caches  # noqa: E402
from aligners.models.mono import potentials  # noqa: E402
from aligners.models.mono.aligner import featurise, predict  # noqa: E402


class _Clock:
    """Wall and process CPU seconds of each timed part (CPU: every thread of the process)."""

    def __init__(self):
        self.cpu: dict[str, float] = {}

    def __call__(self, name, n, out, fn):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        out[name] = n / (time.perf_counter() - t0)
        self.cpu[name] = n / max(time.process_time() - c0, 1e-9)


def _zero_features(src, tgt, *, max_src_len, max_tgt_len, embedder=None, phrase_cues=False):
    """`featurize_states`' shapes, all zeros, no look-ups (the `_nosparse` timings)."""
    F = len(feature_names(max_src_len=max_src_len, max_tgt_len=max_tgt_len,
                          embedding=embedder is not None, phrase_cues=phrase_cues))
    I, C = len(src), 1 + len(tgt) * max_tgt_len
    return (torch.zeros(I, max_src_len, C, F, dtype=torch.float16),
            torch.zeros(I, len(NULL_FEATURES)))


def _parts(aligner, pairs, batch, bf16) -> dict:
    model = aligner.models[aligner.directions[0]]
    enc = model.encoder
    sents = list(dict.fromkeys([tuple(p.src) for p in pairs] + [tuple(p.tgt) for p in pairs]))
    n = len(pairs)
    out = {"pairs": n, "distinct_sentences": len(sents)}
    clock = _Clock()
    with torch.inference_mode():
        enc.vectors(sents[:8])  # warm-up (allocator, kernels)
        clock("encoder", n, out, lambda: enc.vectors(sents))
        if bf16:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                enc.vectors(sents[:8])
                clock("encoder_bf16", n, out, lambda: enc.vectors(sents))
    kw = {"max_src_len": model.max_src_len, "max_tgt_len": model.max_tgt_len}
    clear_caches()
    clock("sparse_cold", n, out, lambda: [featurize_states(p.src, p.tgt, **kw) for p in pairs])
    clock("sparse_warm", n, out, lambda: [featurize_states(p.src, p.tgt, **kw) for p in pairs])
    examples = featurise(pairs, model, decoding=True)  # vectors attached, fine-tuned too
    clock("scorer_viterbi", n, out, lambda: predict(model, examples, batch_size=batch))
    for sparse in (True, False):
        potentials.featurize_states = featurize_states if sparse else _zero_features
        enc._cache.clear()
        clear_caches()
        tag = "" if sparse else "_nosparse"
        for state in ("cold", "warm"):
            clock(f"align_{state}{tag}", n, out, lambda: aligner.align(pairs, batch_size=batch))
    potentials.featurize_states = featurize_states
    out.update({f"{k}_per_cpu_s": v for k, v in clock.cpu.items()})
    return {k: (round(v, 1) if isinstance(v, float) else v) for k, v in out.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="neural model folder")
    ap.add_argument("--data", default="multimwa-wiki")
    ap.add_argument("--split", default="test")
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--bf16", action="store_true")
    args = ap.parse_args(argv)
    pairs = load(args.data, args.split)[: args.limit]
    aligner = load_model(args.model)
    for threads in (int(t) for t in args.threads.split(",")):
        torch.set_num_threads(threads)
        row = {"model": args.model, "data": f"{args.data}:{args.split}", "threads": threads}
        row.update(_parts(aligner, pairs, args.batch, args.bf16))
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
