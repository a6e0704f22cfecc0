"""The word HMM family's aligned model (`aligners.models.aligned.WordAlignment`) and its
model folder (`aligners.export` format).

A folder holds `model.safetensors` (pair keys, both lexical tables, NULL tables, jump
weights), `config.json` (WordAlignConfig, vocabulary sizes, iteration, decoding defaults)
and `vocab.json` (source and target word lists, id = position). `aligners.load(folder)`
returns a `TrainedWordAligner`: the model, its frozen vocabularies and decoding defaults,
ready to `align` (and for `aligners align --load-model`). No pickle.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch

from aligners.data.bitext import PairIndex, build_index, gpu_or_none
from aligners.data.vocab import WordIds
from aligners.errors import AlignersInputError
from aligners.export import ModelFolder, read_model, write_model
from aligners.models.aligned import Aligned, Decoding, RunOptions, WordAlignment
from aligners.models.hmm import FAMILY, config
from aligners.models.hmm.agreement import WordAlignConfig, WordAligner, WordDecoding
from aligners.models.hmm.decode import decode_lines

__all__ = ["KIND", "TrainedWordAligner", "WordAligned"]

KIND = FAMILY.kind
_TENSORS = ("keys", "t_fwd", "t_bwd", "null_tgt", "null_src", "jump_fwd", "jump_bwd")


@dataclass
class WordAligned(Aligned):
    """A text aligned by the word HMM: the model and the text's pair index."""

    model: WordAligner
    index: PairIndex
    run: RunOptions

    def lines(self, outputs, decoding: Decoding, *, posteriors: bool = False) -> dict:
        bar = self.run.bar(self.index.n_sentences, "align")
        out = decode_lines(self.model, self.index, method=decoding.method,
                           threshold=decoding.threshold, heuristic=decoding.symmetrize,
                           posteriors=posteriors, outputs=tuple(outputs), progress=bar.update)
        bar.close()
        return out


@dataclass
class TrainedWordAligner(WordAlignment):
    """A ready aligner: the model, frozen vocabularies (unseen words -> unknown id) and the
    decoding defaults saved with it (method, threshold, symmetrize)."""

    model: WordAligner
    src_ids: WordIds
    tgt_ids: WordIds
    decoding: WordDecoding | None = None

    family = FAMILY.name
    METHODS, DEFAULT = config.METHODS, config.DECODING

    @classmethod
    def fit(cls, pairs, config: WordAlignConfig, run: RunOptions):
        """EM on `pairs` (IBM1 -> HMM, both directions; see WordAligner) on `run.device`."""
        src_ids, tgt_ids = WordIds(), WordIds()
        with run.phase("index"):
            index = build_index(pairs, src_ids, tgt_ids, cells=run.cells(),
                                cache_dir=run.cache_dir, device=gpu_or_none(run.device))
            model = WordAligner.from_index(index, config).to(run.device)
            index.to(run.device)  # batches move once, not every EM iteration
        with run.phase("train"):
            model.reset_counts()
            bar = run.bar(model.n_iterations * len(index), "EM")
            model.fit(index, progress=lambda it, k: bar.update(1))
            bar.close()
        return cls(model, src_ids, tgt_ids), WordAligned(model, index, run)

    def decode(self, pairs, run: RunOptions) -> WordAligned:
        """`pairs` over this model's pair table (`aligners.data.bitext.build_index`), on
        `run.device`: built on the GPU there is one (unless there is a disk cache), else on
        the CPU and then moved to the model's device."""
        device = self.to(run.device).model.keys.device  # batches follow the model
        with run.phase("index"):
            index = build_index(pairs, self.src_ids, self.tgt_ids, cells=run.cells(),
                                keys=self.model.keys.cpu(), cache_dir=run.cache_dir,
                                device=gpu_or_none(device))
        return WordAligned(self.model, index.to(device), run)

    def save_to(self, folder: str | Path, decoding: Decoding | WordDecoding | None = None
                ) -> Path:
        """Write the model folder `folder` atomically (see `aligners.export.write_model`),
        with `decoding` saved (None: WordDecoding's defaults).

        Size: 4 bytes per table entry, O(P + V); vocabularies as JSON word lists.
        """
        model = self.model
        if (len(self.src_ids), len(self.tgt_ids)) != (model.n_src_words, model.n_tgt_words):
            raise ValueError("vocabularies do not match the model's vocabulary sizes")
        dec = WordDecoding(**asdict(decoding)) if decoding is not None else WordDecoding()
        config = {"model": asdict(model.config), "n_src_words": model.n_src_words,
                  "n_tgt_words": model.n_tgt_words, "iteration": int(model.iteration),
                  "decoding": asdict(dec)}
        tensors = {name: getattr(model, name) for name in _TENSORS}
        vocab = {"source": self.src_ids.words, "target": self.tgt_ids.words}
        return write_model(folder, kind=KIND, tensors=tensors, config=config,
                           extras={"vocab": vocab})

    @classmethod
    def from_folder(cls, folder: str | Path | ModelFolder) -> TrainedWordAligner:
        """Read a folder written by `save_to` (the `aligners.load` loader of KIND), its
        saved decoding checked. Raises AlignersInputError naming the file when something
        is missing or inconsistent. Cost: reads O(P + V)."""
        mf = folder if isinstance(folder, ModelFolder) else read_model(folder, kind=KIND)
        where = str(mf.path / "config.json")
        cfg = mf.config
        for key in ("model", "n_src_words", "n_tgt_words", "iteration"):
            if key not in cfg:
                raise AlignersInputError(f"config.json has no {key!r}", path=where)
        config = _fields(WordAlignConfig, cfg["model"], "model", where)
        decoding = _fields(WordDecoding, cfg.get("decoding", {}), "decoding", where)
        ns, nt = cfg["n_src_words"], cfg["n_tgt_words"]
        if not (isinstance(ns, int) and isinstance(nt, int) and ns >= 2 and nt >= 2):
            raise AlignersInputError("config.json: vocabulary sizes must be integers >= 2",
                                     path=where)
        model = WordAligner(keys=mf.tensor("keys"), n_src_words=ns, n_tgt_words=nt,
                            config=config)
        _set_tables(model, mf)
        model.iteration = torch.tensor(int(cfg["iteration"]))
        src, tgt = _vocab(mf, ns, nt)
        return cls(model, src, tgt, decoding).checked(mf)

    def to(self, device) -> TrainedWordAligner:
        """Move the model's tables to `device` (later `index` calls follow). Returns self."""
        self.model.to(device)
        return self


def _fields(cls, value, what: str, path: str):
    names = {f.name for f in fields(cls)}
    if not isinstance(value, dict) or not set(value) <= names:
        raise AlignersInputError(f"config.json: {what} must be an object with keys among "
                                 f"{sorted(names)}", path=path)
    try:
        return cls(**value)
    except TypeError as err:
        raise AlignersInputError(f"config.json: bad {what} ({err})", path=path) from None


def _set_tables(model: WordAligner, mf: ModelFolder) -> None:
    """The saved tables but the keys into `model`, each checked for the length of the
    model's own (a new model's tables have the saved ones' sizes)."""
    saved = {name: mf.tensor(name) for name in _TENSORS[1:]}
    for name, t in saved.items():
        n = getattr(model, name).numel()
        if t.dim() != 1 or t.numel() != n:
            raise AlignersInputError(f"tensor {name!r} has shape {tuple(t.shape)}, "
                                     f"expected ({n},)", path=str(mf.path / "model.safetensors"))
        setattr(model, name, t)


def _vocab(mf: ModelFolder, ns: int, nt: int) -> tuple[WordIds, WordIds]:
    vocab = mf.json("vocab")
    vpath = str(mf.path / "vocab.json")
    if not isinstance(vocab, dict) or set(vocab) != {"source", "target"}:
        raise AlignersInputError("expected {\"source\": [...], \"target\": [...]}", path=vpath)
    src = WordIds.from_json(vocab["source"], path=vpath)
    tgt = WordIds.from_json(vocab["target"], path=vpath)
    if (len(src), len(tgt)) != (ns, nt):
        raise AlignersInputError("vocab.json does not match config.json's vocabulary sizes",
                                 path=vpath)
    return src, tgt
