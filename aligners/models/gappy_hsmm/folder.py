"""The gappy-hsmm family's aligned model (`aligners.models.aligned.WordAlignment`) and its
`aligners/1` model folder.

`PhrasalBundle.fit` trains the family (word HMM start, then the phrasal model by agreement);
`save_to` writes the folder (`aligners.export.write_model`; tensors: the tables, jump weights
and both phrase lists; config: PhrasalConfig, vocabulary sizes, iteration, decoding; extras:
the vocabularies) and `from_folder` reads it back, ready to align. Nothing here unpickles
or imports Lightning.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from aligners.data.bitext import PairIndex, build_index
from aligners.data.pharaoh import link_line
from aligners.data.vocab import WordIds
from aligners.errors import AlignersInputError
from aligners.models.aligned import Aligned, Decoding, RunOptions, WordAlignment
from aligners.models.gappy_hsmm import FAMILY, config
from aligners.models.gappy_hsmm.config import GappyHSMMConfig, PhrasalConfig
from aligners.models.gappy_hsmm.model import PhrasalAligner
from aligners.models.gappy_hsmm.phrase_lists import PhraseList
from aligners.models.gappy_hsmm.prepared import ReuseCache

__all__ = ["KIND", "PhrasalBundle", "PhrasalAligned"]

KIND = FAMILY.kind
_TABLES = ("word_keys", "phrase_keys", "t_fwd", "t_bwd", "null_tgt", "null_src", "jump_fwd",
           "jump_bwd")


@dataclass
class PhrasalAligned(Aligned):
    """A text aligned by the phrasal model: the model, the text's pair index and, after
    training on that text, its prepared batches (`fit_phrasal(prepared=)`; reused). `keep`
    (a dict): the link matrices are kept there for the next `lines` (a small text decoded
    many ways, e.g. a tuning split); None: decoded batch by batch each time."""

    model: PhrasalAligner
    index: PairIndex
    run: RunOptions
    prepared: ReuseCache | None = None
    keep: dict | None = None

    def lines(self, outputs, decoding: Decoding, *, posteriors: bool = False) -> dict:
        """Decoded batch by batch (`batch_link_matrices`): only the lines are kept for the
        whole text, never its link matrices (unless `keep`)."""
        out = {name: [""] * self.index.n_sentences for name in outputs}  # empty side: ""
        for chunk in self._chunks(viterbi=decoding.method == "viterbi"):
            mats = [(lf, lb) for _, lf, lb in chunk]
            for name, lines in _chunk_lines(mats, outputs, decoding, posteriors).items():
                for (r, _, _), line in zip(chunk, lines):
                    out[name][r] = line
        return out

    def _chunks(self, *, viterbi: bool):
        from aligners.models.gappy_hsmm.decode import batch_link_matrices

        if self.keep is not None and viterbi in self.keep:
            return self.keep[viterbi]
        chunks = batch_link_matrices(self.model, self.index, prepared=self.prepared,
                                     viterbi=viterbi)
        if self.keep is not None:
            chunks = self.keep[viterbi] = list(chunks)
        return chunks


def _chunk_lines(mats: list, outputs, decoding: Decoding, posteriors: bool) -> dict:
    """output name -> one line per (forward, backward) link matrix pair of `mats`: "fwd",
    "rev" each direction's posteriors > the threshold (0.5 under Viterbi, whose matrices are
    0/1); "sym" the agreement's product > the threshold, else both directions combined by
    the heuristic (their union under "none")."""
    from aligners.symmetrize import symmetrize

    method, h = decoding.method, decoding.symmetrize
    th = 0.5 if method == "viterbi" else float(decoding.threshold)

    def above(p):
        return [tuple(x) for x in np.argwhere(p > th).tolist()]

    out = {}
    for name in outputs:
        if name != "sym":
            post = [m[0 if name == "fwd" else 1] for m in mats]
        else:
            post = [lf * lb if method == "agreement" else np.maximum(lf, lb) for lf, lb in mats]
        if name != "sym" or method == "agreement":
            links = [above(p) for p in post]
        else:
            links = [sorted(set(above(lf)) | set(above(lb)) if h == "none" else
                            symmetrize(above(lf), above(lb), h)) for lf, lb in mats]
        out[name] = [link_line(ls, [float(p[i, j]) for i, j in ls] if posteriors else None)
                     for ls, p in zip(links, post)]
    return out


@dataclass
class PhrasalBundle(WordAlignment):
    """A loaded model: the aligner, frozen vocabularies and the saved decoding."""

    aligner: PhrasalAligner
    src_ids: WordIds
    tgt_ids: WordIds
    decoding: dict = field(default_factory=dict)

    family = FAMILY.name
    METHODS, DEFAULT = config.METHODS, config.DECODING

    @classmethod
    def fit(cls, pairs, config: GappyHSMMConfig, run: RunOptions):
        """Model 1 -> word HMM (both directions, no agreement: `config.start`), then the
        phrasal model by agreement (`config.phrasal`), on `run.device`."""
        from aligners.models.gappy_hsmm.decode import fit_phrasal
        from aligners.models.gappy_hsmm.init import phrasal_stages

        src_ids, tgt_ids = WordIds(), WordIds()
        with run.phase("index"):
            index = build_index(pairs, src_ids, tgt_ids, cells=run.cells(),
                                cache_dir=run.cache_dir)
        src_ids.frozen = tgt_ids.frozen = True

        def fit_word(word):
            word.to(run.device)
            word.reset_counts()
            bar = run.bar(word.n_iterations * len(index), "word EM")
            word.fit(index, progress=lambda it, k: bar.update(1))
            bar.close()
            word.cpu()

        with run.phase("train"):
            _, model, _, layouts = next(phrasal_stages(
                index, config.for_pairs(index.n_sentences), fit_word))
            model.to(run.device)
            bar = run.bar(model.config.iterations * len(index), "phrasal EM")
            prepared = ReuseCache()
            fit_phrasal(model, index, progress=lambda it, k: bar.update(1), layouts=layouts,
                        prepared=prepared)
            bar.close()
        return cls(model, src_ids, tgt_ids), PhrasalAligned(model, index, run, prepared)

    def decode(self, pairs, run: RunOptions) -> PhrasalAligned:
        with run.phase("index"):
            index = build_index(pairs, self.src_ids, self.tgt_ids, cells=run.cells(),
                                keys=self.aligner.word_keys.cpu(), cache_dir=run.cache_dir)
        self.aligner.to(run.device)
        return PhrasalAligned(self.aligner, index, run)

    def save_to(self, folder, decoding: Decoding | dict | None = None):
        """Write the model folder `folder` atomically, with `decoding` saved."""
        from aligners.export import write_model

        model = self.aligner
        tensors = {n: getattr(model, n) for n in _TABLES}
        for side, lst in (("src", model.src_list), ("tgt", model.tgt_list)):
            tensors[f"{side}_contiguous"] = lst.contiguous
            tensors[f"{side}_gappy"] = lst.gappy
        if isinstance(decoding, Decoding):
            decoding = asdict(decoding)
        config = {"model": asdict(model.config), "n_src_words": model.n_src_words,
                  "n_tgt_words": model.n_tgt_words, "iteration": int(model.iteration),
                  "decoding": decoding or {}}
        vocab = {"source": self.src_ids.words, "target": self.tgt_ids.words}
        return write_model(folder, kind=KIND, tensors=tensors, config=config,
                           extras={"vocab": vocab})

    @classmethod
    def from_folder(cls, folder) -> PhrasalBundle:
        """The model of a read `aligners.export.ModelFolder` (or its path) of this family,
        its saved decoding checked."""
        from aligners.export import ModelFolder, read_model
        from aligners.models.hmm.folder import _vocab

        if not isinstance(folder, ModelFolder):
            folder = read_model(folder, kind=KIND)
        try:
            model = _read(folder, folder.config)
            src, tgt = _vocab(folder, model.n_src_words, model.n_tgt_words)
        except AlignersInputError:
            raise
        except (KeyError, TypeError, ValueError) as err:
            raise AlignersInputError(f"not a valid gappy-hsmm model ({err!r})",
                                     path=str(folder.path)) from None
        model.reset_counts()
        return cls(model, src, tgt, dict(folder.config.get("decoding") or {})).checked(folder)


def _read(folder, c: dict) -> PhrasalAligner:
    """The aligner of a read folder (its config.json `c`)."""
    cfg = PhrasalConfig(**c["model"])
    Vs, Vt = int(c["n_src_words"]), int(c["n_tgt_words"])
    lists = {side: PhraseList(folder.tensor(f"{side}_contiguous").long(),
                              folder.tensor(f"{side}_gappy").long(), V, cfg.max_phrase_len)
             for side, V in (("src", Vs), ("tgt", Vt))}
    model = PhrasalAligner(word_keys=folder.tensor("word_keys"),
                           phrase_keys=folder.tensor("phrase_keys"), n_src_words=Vs,
                           n_tgt_words=Vt, src_list=lists["src"], tgt_list=lists["tgt"],
                           jump_fwd=folder.tensor("jump_fwd"),
                           jump_bwd=folder.tensor("jump_bwd"), config=cfg)
    for name in _TABLES[2:]:
        t = folder.tensor(name)
        if t.shape != getattr(model, name).shape:
            raise AlignersInputError(f"tensor {name!r} has shape {tuple(t.shape)}, "
                                     f"expected {tuple(getattr(model, name).shape)}",
                                     path=str(folder.path))
        setattr(model, name, t.float())
    model.iteration = torch.tensor(int(c.get("iteration", 0)))
    return model
