"""The phrasal aligner as an `aligners/1` model folder (kind "phrasal-hsmm").

`phrasal_parts` gives the keyword arguments of `aligners.export.write_model` (tensors:
the tables, jump weights and both phrase lists; config: PhrasalConfig, vocabulary sizes,
iteration, decoding; extras: the vocabularies). `load_phrasal` (registered in
`aligners.export.LOADERS`) turns a read folder back into a `PhrasalBundle` ready to align.
Nothing here unpickles or imports Lightning.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch

from aligners.data.vocab import WordIds
from aligners.errors import AlignersInputError
from aligners.models.phrasal.model import PhrasalAligner, PhrasalConfig
from aligners.models.phrasal.phrase_lists import PhraseList

__all__ = ["KIND", "PhrasalBundle", "phrasal_parts", "load_phrasal"]

KIND = "phrasal-hsmm"
_TABLES = ("word_keys", "phrase_keys", "t_fwd", "t_bwd", "null_tgt", "null_src", "jump_fwd",
           "jump_bwd")


@dataclass
class PhrasalBundle:
    """A loaded model: the aligner, frozen vocabularies and the saved decoding."""

    aligner: PhrasalAligner
    src_ids: WordIds
    tgt_ids: WordIds
    decoding: dict = field(default_factory=dict)

    def align(self, pairs, *, method=None, threshold=None, heuristic=None, batch_cells=1_000_000):
        """Links (sorted (i, j) lists) of token pairs [(src tokens, tgt tokens), ...]."""
        from aligners.data.bitext import build_index
        from aligners.models.phrasal.decode import decode, link_matrices

        d = {**{"method": "agreement", "threshold": 0.3, "heuristic": "none"}, **self.decoding}
        d.update({k: v for k, v in (("method", method), ("threshold", threshold),
                                    ("heuristic", heuristic)) if v is not None})
        index = build_index(pairs, self.src_ids, self.tgt_ids, cells=batch_cells,
                            keys=self.aligner.word_keys.cpu())
        mats = link_matrices(self.aligner, index, viterbi=d["method"] == "viterbi")
        return decode(mats, method=d["method"], threshold=float(d["threshold"]),
                      heuristic=d["heuristic"])


def phrasal_parts(model: PhrasalAligner, src_ids: WordIds, tgt_ids: WordIds, *,
                  decoding: dict | None = None) -> dict:
    """`write_model` keyword arguments (kind, tensors, config, extras) for `model`."""
    tensors = {n: getattr(model, n) for n in _TABLES}
    for side, lst in (("src", model.src_list), ("tgt", model.tgt_list)):
        tensors[f"{side}_contiguous"] = lst.contiguous
        tensors[f"{side}_gappy"] = lst.gappy
    config = {"model": asdict(model.config), "n_src_words": model.n_src_words,
              "n_tgt_words": model.n_tgt_words, "iteration": int(model.iteration),
              "decoding": decoding or {}}
    extras = {"vocab": {"source": src_ids.to_json(), "target": tgt_ids.to_json()}}
    return {"kind": KIND, "tensors": tensors, "config": config, "extras": extras}


def load_phrasal(folder) -> PhrasalBundle:
    """A `PhrasalBundle` from an `aligners.export.ModelFolder` of kind "phrasal-hsmm"."""
    c, path = folder.config, str(folder.path)
    try:
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
                                         path=path)
            setattr(model, name, t.float())
        model.iteration = torch.tensor(int(c.get("iteration", 0)))
        vocab = folder.json("vocab")
        src = WordIds.from_json(vocab["source"], path=f"{path}/vocab.json")
        tgt = WordIds.from_json(vocab["target"], path=f"{path}/vocab.json")
    except (KeyError, TypeError, ValueError) as err:
        if isinstance(err, AlignersInputError):
            raise
        raise AlignersInputError(f"not a valid phrasal-hsmm model ({err!r})", path=path) from None
    if len(src) != Vs or len(tgt) != Vt:
        raise AlignersInputError("vocab.json does not match config.json", path=path)
    model.reset_counts()
    return PhrasalBundle(model, src, tgt, dict(c.get("decoding") or {}))
