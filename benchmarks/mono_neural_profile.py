"""cProfile of the neural semi-CRF aligner: decoding a split, or featurising + one training epoch.

    python benchmarks/mono_neural_profile.py decode --model RUN/model --data multimwa-wiki \
        --split test --limit 200 [--top 30] [--encoder-precision fp32|bf16|int8]
    python benchmarks/mono_neural_profile.py train --data msr06 --holdout 100 [--top 30]

One torch thread (as training and `MonoAligner.align` run). `decode` profiles a cold
`MonoAligner.align` (sparse features + encoder + scorer + Viterbi); `train` profiles the
featurisation of the training pairs, then ONE epoch of the training loop of
`aligners.training.monolingual` (batches of `--batch` pairs, softmax-margin loss, backward,
AdamW with the model's parameter groups) on a fresh model with the config defaults. Prints
CPU / wall seconds per phase and the top functions by cumulative and by own time.
"""

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aligners.data.datasets import load  # noqa: E402
from aligners.features.string_sim import clear_caches  # noqa: E402
from aligners.models.mono.aligner import build_model, chunks, featurise  # noqa: E402


def _report(prof: cProfile.Profile, top: int, title: str) -> None:
    for key in ("cumulative", "tottime"):
        s = io.StringIO()
        pstats.Stats(prof, stream=s).strip_dirs().sort_stats(key).print_stats(top)
        print(f"==== {title}: top {top} by {key}\n{s.getvalue()}", flush=True)


def _timed(fn, prof: cProfile.Profile, label: str):
    c0, w0 = time.process_time(), time.perf_counter()
    prof.enable()
    out = fn()
    prof.disable()
    print(f"## {label}: {time.process_time() - c0:.1f} CPU s, "
          f"{time.perf_counter() - w0:.1f} wall s", flush=True)
    return out


def decode(args) -> None:
    from aligners.export import load as load_model

    pairs = load(args.data, args.split)[: args.limit]
    aligner = load_model(args.model)
    clear_caches()
    prof = cProfile.Profile()
    kw = {} if args.encoder_precision is None else {"encoder_precision": args.encoder_precision}
    _timed(lambda: aligner.align(pairs, batch_size=args.batch, **kw), prof,
           f"decode {len(pairs)} pairs (cold)")
    _report(prof, args.top, "decode")


def train(args) -> None:
    pairs = load(args.data, "train")
    if args.holdout:
        pairs = pairs[: -args.holdout]
    torch.manual_seed(0)
    model = build_model(kind="neural")
    clear_caches()
    prof = cProfile.Profile()
    examples = _timed(lambda: featurise(pairs, model), prof,
                      f"featurise {len(pairs)} training pairs")
    _report(prof, args.top, "featurise")
    batches, _ = chunks(examples, max_tgt_len=model.max_tgt_len, batch_size=args.batch)
    opt = torch.optim.AdamW(model.trainable_groups(lr=3e-3, sparse_lr=0.1, encoder_lr=2e-5),
                            weight_decay=0.01)
    model.train()

    def epoch():
        for b in batches:
            opt.zero_grad()
            loss = model.loss(b, cost_weight=1.0) / len(pairs)
            loss.backward()
            (0.5 * len(b.examples) / len(pairs) * model.l2() / len(pairs)).backward()
            opt.step()

    prof = cProfile.Profile()
    _timed(epoch, prof, f"one epoch, {len(batches)} batches of <= {args.batch}")
    _report(prof, args.top, "epoch")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("decode", "train"))
    ap.add_argument("--model", help="neural model folder (decode)")
    ap.add_argument("--data", default="multimwa-wiki")
    ap.add_argument("--split", default="test")
    ap.add_argument("--limit", type=int, default=200)
    ap.add_argument("--holdout", type=int, default=100, help="train: last N pairs left out")
    ap.add_argument("--batch", type=int, default=None, help="decode 32, train 8")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--encoder-precision", default=None, choices=("fp32", "bf16", "int8"),
                    help="decode: the neural encoder's (default: the aligner's)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.batch is None:
        args.batch = 32 if args.what == "decode" else 8
    if args.what == "decode":
        if not args.model:
            ap.error("decode needs --model")
        decode(args)
    else:
        train(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
