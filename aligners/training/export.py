"""Save / load a trained word aligner: safetensors (tables) + JSON (config, vocabularies).

A model folder holds `model.safetensors` (pair keys, both lexical tables, NULL tables, jump
weights), `config.json` (WordAlignConfig, vocabulary sizes, iteration, decoding defaults)
and `vocab.json` (source and target word lists, id = position). Loading never unpickles.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from aligners.data.vocab import WordIds
from aligners.errors import AlignersInputError
from aligners.models.word_aligner import WordAlignConfig, WordAligner

__all__ = ["save_word_aligner", "load_word_aligner", "FORMAT"]

FORMAT = "aligners-word-aligner/1"
_TENSORS = ("keys", "t_fwd", "t_bwd", "null_tgt", "null_src", "jump_fwd", "jump_bwd")


def save_word_aligner(
    path: str | Path,
    model: WordAligner,
    src_words: WordIds,
    tgt_words: WordIds,
    *,
    decoding: dict | None = None,
) -> Path:
    """Write the model folder `path` (created if needed). Returns the folder."""
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    tensors = {name: getattr(model, name).detach().cpu().contiguous() for name in _TENSORS}
    save_file(tensors, str(out / "model.safetensors"))
    config = {
        "format": FORMAT,
        "model": asdict(model.config),
        "n_src_words": model.n_src_words,
        "n_tgt_words": model.n_tgt_words,
        "iteration": int(model.iteration),
        "decoding": decoding or {},
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    vocab = {"source": src_words.words, "target": tgt_words.words}
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    return out


def load_word_aligner(path: str | Path) -> tuple[WordAligner, WordIds, WordIds, dict]:
    """Read a model folder: (model, frozen source ids, frozen target ids, decoding dict).

    Unseen words map to the unknown id at alignment time. Raises AlignersInputError when the
    folder or a file is missing or of another format.
    """
    folder = Path(path)
    need = [folder / n for n in ("config.json", "vocab.json", "model.safetensors")]
    for f in need:
        if not f.is_file():
            raise AlignersInputError(f"not a saved word aligner: {f} is missing", path=str(folder))
    config = json.loads(need[0].read_text(encoding="utf-8"))
    if config.get("format") != FORMAT:
        raise AlignersInputError(
            f"expected format {FORMAT!r}, found {config.get('format')!r}", path=str(need[0])
        )
    vocab = json.loads(need[1].read_text(encoding="utf-8"))
    tensors = load_file(str(need[2]))
    cfg = WordAlignConfig(**config["model"])
    model = WordAligner(keys=tensors["keys"], n_src_words=config["n_src_words"],
                        n_tgt_words=config["n_tgt_words"], config=cfg)
    for name in _TENSORS[1:]:
        setattr(model, name, tensors[name])
    model.iteration = torch.tensor(config["iteration"])
    src, tgt = WordIds(), WordIds()
    for ids, words in ((src, vocab["source"]), (tgt, vocab["target"])):
        if words[:2] != list(WordIds._RESERVED):
            raise AlignersInputError("vocab.json: unexpected reserved entries", path=str(folder))
        for w in words[2:]:
            ids.add(w)
        ids.frozen = True
    if len(src) != model.n_src_words or len(tgt) != model.n_tgt_words:
        raise AlignersInputError("vocab.json does not match config.json", path=str(folder))
    return model, src, tgt, config.get("decoding", {})
