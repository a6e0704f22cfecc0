"""A ready monolingual aligner: featurise, batch, decode, save and load (no Lightning).

`MonoAligner` holds one CRF (token or phrasal, `aligners.models.mono.crf` / `.semicrf`) per
trained direction (`s2t`: the pair's source is the CRF's observation side; `t2s`: the reverse
model, trained and decoded on swapped pairs) and aligns pairs in source-target order whatever
the direction: a t2s model's links and blocks are flipped back.

It is saved as one model folder (`aligners.export.write_model`, kind `mono-token-crf`,
`mono-phrase-crf` or `mono-neural-crf`; tensors `<direction>.<parameter>`; the neural model's
config names its encoder source, and its tensors hold the encoder only when fine-tuned), and
`aligners.load(folder)` returns it ready for inference (`load_mono` is the registered loader).

Cost of `align`: featurisation O(I * J) memoised word-pair look-ups + O(Ls*Lt*I*J*F) tensor
work per pair, then Viterbi O(Ls * Lt^2 * I * J^2) per pair (token model: O(I * J^2)), or
for `decode="posterior"` a float64 forward-backward pass of the same order (`predict`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import torch

from aligners.data.types import AlignedPair, Alignment
from aligners.errors import AlignersInputError
from aligners.models.mono.combine import check_combine, combined_output, posterior_output
from aligners.models.mono.config import DECODES, MODEL_KEYS
from aligners.models.mono.crf import TokenCRFAligner
from aligners.models.mono.potentials import MonoExample, collate, prepare
from aligners.models.mono.semicrf import PhraseCRFAligner

__all__ = ["KINDS", "DIRECTIONS", "DECODES", "MonoAligner", "build_model", "flip",
           "one_thread", "featurise", "chunks", "predict", "check_decode", "shared_embedder",
           "load_mono", "DEFAULT_ENCODER_PRECISION", "set_encoder_precision", "DECODE_BATCH"]

# model.kind -> export kind (aligners.export.LOADERS)
KINDS = {"token": "mono-token-crf", "phrase": "mono-phrase-crf", "neural": "mono-neural-crf"}
DIRECTIONS = ("s2t", "t2s")
# the neural aligner's encoder precision when decoding with `MonoAligner.align` (training and
# `predict` on a bare model keep the encoder's own, fp32); chosen on wiki dev by the rule in
# the git log "Issue 13: decoding speed (branch neural4)"
DEFAULT_ENCODER_PRECISION = "bf16"
# pairs per decoding batch of `MonoAligner.align` by default: the neural aligner's span-pair
# scorer pads every pair of a batch to the longest source and target (300 Wiki test pairs,
# scorer + Viterbi 1.0-1.2 CPU s at 8-32 a batch, 1.6-1.9 s at 64)
DECODE_BATCH = {"token": 64, "phrase": 64, "neural": 32}


def build_model(*, kind: str, max_src_len: int = 3, max_tgt_len: int = 3,
                embedding: bool = False, phrase_cues: bool = False,
                **neural) -> PhraseCRFAligner:
    """`kind` = "token" (linear-chain CRF) or "phrase" (semi-Markov, Ls x Lt); zero weights.
    "neural": `NeuralCRFAligner` (`neural` = its keywords: encoder source, proj, hidden,
    sparse, finetune, dim; the encoder is loaded here)."""
    if kind == "neural":
        from aligners.models.mono.neural import NeuralCRFAligner, encoder_source, make_encoder

        source = encoder_source(neural.pop("encoder", None))
        return NeuralCRFAligner(encoder=make_encoder(source), source=source,
                                max_src_len=max_src_len, max_tgt_len=max_tgt_len,
                                embedding=embedding, phrase_cues=phrase_cues, **neural)
    if neural:
        raise ValueError(f"unknown model settings for kind {kind!r}: {sorted(neural)}")
    if kind == "token":
        return TokenCRFAligner(embedding=embedding)
    if kind == "phrase":
        return PhraseCRFAligner(max_src_len=max_src_len, max_tgt_len=max_tgt_len,
                                embedding=embedding, phrase_cues=phrase_cues)
    raise ValueError(f"model.kind must be 'token' or 'phrase', got {kind!r}")


def flip(pair: AlignedPair) -> AlignedPair:
    """The pair with source and target (and its gold links) swapped."""
    al = pair.alignment
    flipped = None if al is None else Alignment(frozenset((j, i) for i, j in al.sure),
                                                frozenset((j, i) for i, j in al.possible))
    return AlignedPair(pair.tgt, pair.src, flipped, pair.id)


@contextlib.contextmanager
def one_thread():
    """Run the block on one intra-op thread, then restore the caller's setting. Per-pair
    features and decoding batches are small tensors: intra-op threads only add fork/join
    waits (measured on the loaded 2-core box by the since-retired mono_side_by_side script,
    commit 9c3f34f: phrase decoding 45 pairs/s on 2 threads vs 3063 on 1)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@functools.lru_cache(maxsize=1)
def shared_embedder():
    """The MiniLM embedder (one per process; needs `pip install -e .[neural]`)."""
    from aligners.features.embedding import MiniLMEmbedder
    return MiniLMEmbedder()


def featurise(pairs: Sequence[AlignedPair], model: PhraseCRFAligner, *, direction: str = "s2t",
              gold_links: str = "possible", embedder=None,
              decoding: bool = False) -> list[MonoExample]:
    """Pairs -> MonoExamples for `model` (t2s swaps the sentences; gold links kept when
    present: S∪P with `gold_links="possible"`, S with "sure"). Cost: see module docstring.
    A model with `attach` (the neural aligner: encoder vectors from the sentences alone) runs
    it in a second thread on sentence-only examples while this one computes the sparse
    features (2 cores: wall ~ max instead of sum), then copies the features in.
    `decoding=True` (examples that are only decoded): a fine-tuned encoder's vectors are
    computed there too (`NeuralCRFAligner.attach`), not in the scorer."""
    if model.embedding and embedder is None:
        embedder = shared_embedder()
    if embedder is not None and hasattr(embedder, "encode"):
        embedder.encode([p.src for p in pairs] + [p.tgt for p in pairs])  # batched, memoised
    oriented = [flip(p) if direction == "t2s" else p for p in pairs]
    attach = getattr(model, "attach", None)  # the neural model adds its encoder's vectors
    vectors = None
    if attach is not None:  # the encoder (torch: no GIL) runs while this thread featurises
        stubs = [MonoExample(tuple(p.src), tuple(p.tgt), None, None, None) for p in oriented]
        vectors = (_background(attach, stubs) if not decoding  # decoding: one encoder
                   else _background(functools.partial(attach, decoding=True), stubs,
                                    threads=1))  # thread beside this one (2 cores busy)
    out = []
    with one_thread():
        for p in oriented:
            links = None
            if p.alignment is not None:
                links = p.alignment.possible if gold_links == "possible" else p.alignment.sure
            out.append(prepare(p.src, p.tgt, links, max_src_len=model.max_src_len,
                               max_tgt_len=model.max_tgt_len, embedder=embedder,
                               phrase_cues=model.phrase_cues))
    if vectors is None:
        return out
    return [dataclasses.replace(v, emit=e.emit, null=e.null, gold=e.gold)
            for v, e in zip(vectors.result(), out)]


def _background(fn, *args, threads: int | None = None) -> Future:
    """`fn(*args)` in a second (daemon) thread with the caller's torch intra-op thread count
    (a new thread would otherwise start from the default) or `threads`; the future's
    `result()` waits for it and returns it (or re-raises its exception)."""
    future, threads = Future(), threads or torch.get_num_threads()

    def run():
        try:
            torch.set_num_threads(threads)
            future.set_result(fn(*args))
        except BaseException as err:  # re-raised in the caller's thread
            future.set_exception(err)

    threading.Thread(target=run, daemon=True).start()
    return future


def chunks(examples: list[MonoExample], *, max_tgt_len: int, batch_size: int,
           with_gold: bool = True, cost: tuple[float, float, float] = (1.0, 1.0, 0.0)):
    """Length-bucketed MonoBatches (sorted by target then source length) and the order;
    `cost`: `collate`'s (fp_cost, fn_cost, nonident_fn_cost). Batches are built on the CPU;
    move them with `MonoBatch.to(device)`."""
    if batch_size < 1:
        raise ValueError(f"batch size must be >= 1, got {batch_size}")
    order = sorted(range(len(examples)), key=lambda n: (examples[n].emit.shape[2] // 8,
                                                         len(examples[n].src)))
    batches = [collate([examples[n] for n in order[s: s + batch_size]], max_tgt_len=max_tgt_len,
                       fp_cost=cost[0], fn_cost=cost[1], nonident_fn_cost=cost[2],
                       with_gold=with_gold)
               for s in range(0, len(order), batch_size)]
    return batches, order


def set_encoder_precision(model, precision: str) -> None:
    """Set the inference precision ("fp32" | "bf16" | "int8") of `model`'s encoder if it has
    one (the neural aligner); other models ignore it. Bad values: AlignersInputError."""
    from aligners.features.embedding import check_precision

    check_precision(precision)
    enc = getattr(model, "__dict__", {}).get("encoder")
    if enc is not None and hasattr(enc, "set_precision"):
        enc.set_precision(precision)


def check_decode(decode: str, threshold: float) -> tuple[str, float]:
    """(decode, threshold) if `decode` is one of `DECODES` and 0 <= threshold < 1, else
    AlignersInputError with a one-line message."""
    if decode not in DECODES:
        raise AlignersInputError(f"decode must be one of {list(DECODES)}, got {decode!r}")
    try:
        t = float(threshold)
    except (TypeError, ValueError):
        t = float("nan")
    if not 0.0 <= t < 1.0:
        raise AlignersInputError(f"threshold must be a number in [0, 1), got {threshold!r}")
    return decode, t


def _batched(model: PhraseCRFAligner, examples: list[MonoExample], fn, batch_size: int):
    """`fn(batch)` over length buckets on the model's device, results in `examples` order."""
    model.eval()
    device = model.w_emit.device
    batches, order = chunks(examples, max_tgt_len=model.max_tgt_len, batch_size=batch_size,
                            with_gold=False)
    with one_thread():
        flat = [r for b in batches for r in fn(b.to(device))]
    return [r for _, r in sorted(zip(order, flat), key=lambda nr: nr[0])]


@torch.no_grad()
def predict(model: PhraseCRFAligner, examples: list[MonoExample], *, batch_size: int = 64,
            decode: str = "viterbi", threshold: float = 0.5):
    """Decode in length buckets on the model's device; per example (blocks, links,
    normalised score), in the model's own (observation-first) order. `decode="viterbi"`:
    the best path (score = Viterbi score / I); "posterior": the links whose posterior exceeds
    `threshold` (`PhraseCRFAligner.decode_posterior`)."""
    decode, threshold = check_decode(decode, threshold)
    fn = (model.decode if decode == "viterbi"
          else functools.partial(model.decode_posterior, threshold=threshold))
    return _batched(model, examples, fn, batch_size)


def _as_pairs(pairs, target=None) -> list[AlignedPair]:  # align(source, target), any family's
    from aligners.models.aligned import token_pairs
    return token_pairs(pairs, target, make=AlignedPair)


class MonoAligner:
    """One trained CRF per direction; `align` returns source-target output for any of them."""

    def __init__(self, models: dict[str, PhraseCRFAligner], *, kind: str,
                 meta: dict[str, Any] | None = None,
                 encoder_precision: str = DEFAULT_ENCODER_PRECISION):
        if not models or any(d not in DIRECTIONS for d in models):
            raise ValueError(f"directions must be a non-empty subset of {DIRECTIONS}, "
                             f"got {sorted(models)}")
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
        self.models, self.kind, self.meta = dict(models), kind, dict(meta or {})
        from aligners.features.embedding import check_precision

        self.encoder_precision = check_precision(encoder_precision)  # the neural encoder's

    @property
    def directions(self) -> list[str]:
        return [d for d in DIRECTIONS if d in self.models]

    def to(self, device) -> MonoAligner:
        for m in self.models.values():
            m.to(device)
        return self

    def _decoding_examples(self, pairs, direction: str | None, embedder,
                           encoder_precision: str | None):
        """(direction, its model in eval mode at the encoder precision, the pairs featurised
        for decoding) for `align` and `posteriors`."""
        direction = direction or self.directions[0]
        if direction not in self.models:
            raise AlignersInputError(f"this model has no {direction!r} direction; it has "
                                     f"{self.directions}")
        model = self.models[direction]
        set_encoder_precision(model, encoder_precision or self.encoder_precision)
        model.eval()  # before featurise: its encoder thread and the scorer see eval mode
        return direction, model, featurise(_as_pairs(pairs), model, direction=direction,
                                           embedder=embedder, decoding=True)

    def align(self, pairs: Sequence, target: Sequence | None = None, *,
              direction: str | None = None, batch_size: int | None = None, embedder=None,
              decode: str = "viterbi", threshold: float = 0.5,
              encoder_precision: str | None = None, combine: str = "none"):
        """Per pair (blocks [(src_start, src_len, tgt_start, tgt_len)], links [(i, j)] sorted,
        normalised score), in source-target order for either direction (default: the first
        saved one). `decode`: "viterbi" (default) or "posterior" with `threshold` (see
        `predict`). `combine` (default "none": one direction): union | intersect | grow-diag |
        posterior combine both saved directions (`aligners.models.mono.combine`; a model with
        one direction, or `direction` given too: AlignersInputError). `encoder_precision`: the
        neural encoder's, fp32 | bf16 | int8 (default: `self.encoder_precision`; kept on the model
        for later calls). `batch_size`: pairs per decoding batch (default `DECODE_BATCH`).
        Cost: see module docstring."""
        pairs = _as_pairs(pairs, target)
        check_decode(decode, threshold)
        if check_combine(combine, self.directions) != "none":
            if direction is not None:
                raise AlignersInputError(f"give a direction or combine={combine!r}, not both")
            kw = {"batch_size": batch_size, "embedder": embedder,
                  "encoder_precision": encoder_precision}
            if combine == "posterior":  # the mean of the two directions' link posteriors
                a, b = (self.posteriors(pairs, direction=d, **kw) for d in DIRECTIONS)
                return [posterior_output((pa + pb) / 2, threshold) for pa, pb in zip(a, b)]
            a, b = (self.align(pairs, direction=d, decode=decode, threshold=threshold, **kw)
                    for d in DIRECTIONS)
            return [combined_output(x, y, combine) for x, y in zip(a, b)]
        direction, model, examples = self._decoding_examples(pairs, direction, embedder,
                                                             encoder_precision)
        out = predict(model, examples, batch_size=batch_size or DECODE_BATCH[self.kind],
                      decode=decode, threshold=threshold)
        if direction == "t2s":  # blocks and links back to source-target order
            out = [(sorted((t, lt, s, k) for s, k, t, lt in blocks),
                    sorted((j, i) for i, j in links), score) for blocks, links, score in out]
        return out

    def posteriors(self, pairs: Sequence[AlignedPair | tuple[Sequence[str], Sequence[str]]],
                   *, direction: str | None = None, batch_size: int | None = None,
                   embedder=None, encoder_precision: str | None = None) -> list[torch.Tensor]:
        """Per pair the (I, J) float64 link-posterior matrix [source word, target word] (a
        t2s model's is transposed back to source-target order). Cost: as `align`."""
        direction, model, examples = self._decoding_examples(pairs, direction, embedder,
                                                             encoder_precision)
        out = _batched(model, examples, lambda b: [p.cpu() for p in model.link_posteriors(b)],
                       batch_size or DECODE_BATCH[self.kind])
        return [p.T.contiguous() for p in out] if direction == "t2s" else out

    def export_parts(self, config: dict[str, Any] | None = None
                     ) -> tuple[str, dict[str, torch.Tensor], dict[str, Any]]:
        """(folder kind, tensors "<direction>.<name>", plain-JSON config) of this aligner, as
        `save` writes them (`load_mono` reads them back); `config` adds metadata."""
        first = self.models[self.directions[0]]
        tensors = {f"{d}.{k}": v for d in self.directions
                   for k, v in self.models[d].state_dict().items()}
        hp = (first.export_config() if hasattr(first, "export_config")
              else {k: getattr(first, k) for k in MODEL_KEYS})
        cfg = {"model": {"kind": self.kind, **hp},
               "directions": self.directions, "feature_names": list(first.feature_names),
               **self.meta, **(config or {})}
        return KINDS[self.kind], tensors, cfg

    def save(self, folder: str | Path, *, config: dict[str, Any] | None = None) -> Path:
        """Write the model folder (`aligners.export.write_model`) and return it. `config`
        adds plain-JSON metadata (e.g. the training settings)."""
        from aligners.export import write_model

        kind, tensors, cfg = self.export_parts(config)
        return write_model(folder, kind=kind, tensors=tensors, config=cfg)


def load_mono(folder) -> MonoAligner:
    """`aligners.export` loader: ModelFolder of kind mono-token-crf / mono-phrase-crf ->
    MonoAligner on the CPU. A config or tensors that do not fit raise AlignersInputError."""
    cfg = folder.config
    try:
        hp = dict(cfg["model"])
        kind = hp.pop("kind")
        directions = list(cfg["directions"])
        if KINDS.get(kind) != folder.kind:
            raise ValueError(f"model.kind {kind!r} does not match kind {folder.kind!r}")
        hp = hp if kind == "neural" else {k: hp[k] for k in MODEL_KEYS}
        models = {d: build_model(kind=kind, **hp) for d in directions}
    except (KeyError, TypeError, ValueError, OSError) as err:
        raise AlignersInputError(f"bad monolingual model config ({type(err).__name__}: {err})",
                                 path=str(folder.path / "config.json")) from None
    for d, m in models.items():
        if list(m.feature_names) != list(cfg.get("feature_names", m.feature_names)):
            raise AlignersInputError("the feature set differs from this version's: retrain "
                                     "the model", path=str(folder.path / "config.json"))
        state = {k: folder.tensor(f"{d}.{k}") for k in m.state_dict()}
        try:
            m.load_state_dict(state)
        except RuntimeError as err:
            raise AlignersInputError(f"tensors do not fit the model ({err})".splitlines()[0],
                                     path=str(folder.path / "model.safetensors")) from None
        m.eval()
    meta = {k: v for k, v in cfg.items()
            if k not in ("format", "kind", "model", "directions", "feature_names")}
    return MonoAligner(models, kind=kind, meta=meta)
