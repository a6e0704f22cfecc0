"""The monolingual aligners' model settings, defaults and value rules, in one place (no torch
import: the `aligners monoalign` parser reads them).

`MonoConfig` is the `model` section of the monolingual task (configs/model/mono_token.yaml,
mono_phrase.yaml, mono_neural.yaml restate it; a comment says where a file differs; a test
checks both) and the source of `aligners monoalign`'s decoding defaults; `MonoTraining` and
`MonoData` are the task's `training` and `data` sections (`training.threads` is monoalign's
`--threads` default too). The neural keys
(`encoder` .. `encoder_layers`) are read for `kind: neural` only. The choice tuples
(`MODEL_KINDS`, `DECODES`, `COMBINES`, `CONTEXTS`) are the ones the modules check against.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from aligners.config_checks import Rule

__all__ = ["MonoConfig", "MonoTraining", "MonoData", "MODEL_KINDS", "DECODES", "COMBINES",
           "CONTEXTS", "PRECISIONS", "NEURAL_KEYS"]

MODEL_KINDS = ("token", "phrase", "neural")  # model.kind
DECODES = ("viterbi", "posterior")
COMBINES = ("none", "union", "intersect", "grow-diag", "posterior")
CONTEXTS = ("separate", "pair", "both")
PRECISIONS = ("fp32", "bf16", "int8")  # = aligners.features.embedding.PRECISIONS (tested)
# the neural aligner's keyword settings (`aligner.build_model(**...)`)
NEURAL_KEYS = ("encoder", "proj", "hidden", "sparse", "finetune", "context", "cosine",
               "encoder_layers")

_BOOL = Rule("bool")
_POS, _NONNEG, _COUNT = Rule("float", lo=0, lo_open=True), Rule("float", lo=0), Rule("int", lo=1)


@dataclass
class MonoConfig:
    """Token CRF / semi-Markov phrase CRF / neural semi-CRF (Yao et al. 2013; Lan et al.
    2021): lattice, features, decoding, and the neural aligner's encoder settings."""

    kind: str  # token | phrase | neural (required: the config file selects it)
    max_src_len: int = 3  # longest source segment (Ls; the token CRF: 1)
    max_tgt_len: int = 3  # longest target phrase (Lt; the token CRF: 1)
    embedding: bool = False  # the MiniLM cosine as one more sparse feature
    phrase_cues: bool = False  # chunk-boundary proxies for multi-token blocks
    decode: str = "viterbi"  # viterbi (best path) | posterior (links above `threshold`)
    threshold: float = 0.5  # posterior decoding only
    combine: str = "none"  # both saved directions: none | union | intersect | grow-diag |
    # posterior (mean link posterior of s2t and t2s > threshold)
    encoder_precision: str | None = None  # decoding only: fp32 | bf16 | int8 (None: the
    # aligner's default, `aligner.DEFAULT_ENCODER_PRECISION`)
    encoder: dict | None = None  # {package: NAME} | {path: DIR} (None: the shipped MiniLM)
    proj: int = 64  # word vectors are projected to this size before span pooling
    hidden: int = 64  # span-pair MLP hidden size
    sparse: bool = True  # add the Yao et al. sparse feature score
    finetune: bool = False  # train the encoder too
    context: str = "separate"  # word vectors: separate | pair | both (`CONTEXTS`)
    cosine: bool = False  # span cosines as inputs of the pair scorer
    encoder_layers: int | None = None  # only the encoder's first N layers (None: all)

    RULES: ClassVar[dict[str, Rule]] = {
        "kind": Rule("str", choices=MODEL_KINDS),
        "max_src_len": Rule("int", lo=1),
        "max_tgt_len": Rule("int", lo=1),
        "embedding": _BOOL,
        "phrase_cues": _BOOL,
        "decode": Rule("str", choices=DECODES),
        "threshold": Rule("float", lo=0, hi=1, hi_open=True),
        "combine": Rule("str", choices=COMBINES, nullable=True),  # null: none
        "encoder_precision": Rule("str", choices=PRECISIONS, nullable=True),
        "proj": Rule("int", lo=1),
        "hidden": Rule("int", lo=1),
        "sparse": _BOOL,
        "finetune": _BOOL,
        "context": Rule("str", choices=CONTEXTS),
        "cosine": _BOOL,
        "encoder_layers": Rule("int", lo=1, nullable=True),
    }

    def neural(self) -> dict:
        """The neural aligner's keyword settings (`NEURAL_KEYS`)."""
        return {k: getattr(self, k) for k in NEURAL_KEYS}


@dataclass
class MonoTraining:
    """How the monolingual aligners train (defaults: configs/experiment/yao2013_common.yaml,
    the paper's L-BFGS full batch; the neural experiments override them)."""

    optimizer: str = "lbfgs"  # lbfgs (full batch) | adam | adamw (mini-batch)
    lr: float = 1.0  # L-BFGS step scale (adam: ~0.05)
    max_iter: int = 40  # L-BFGS iterations per epoch
    epochs: int = 1
    l2: float = 1.0  # L2 strength (sum-loss scale)
    cost_weight: float = 1.0  # softmax-margin Hamming cost; 0 = conditional log-loss
    fp_cost: float = 1.0  # cost per predicted link not in gold
    fn_cost: float = 1.0  # cost per gold link missed
    nonident_fn_cost: float = 0.0  # extra cost per missed gold link whose words differ
    gold_links: str = "possible"  # train on S∪P (possible) or S (sure)
    batch_size: int = 32
    decode_batch: int = 64
    threads: int = 1
    directions: list[str] = field(default_factory=lambda: ["s2t"])  # [s2t, t2s]: both
    members: list | None = None  # [{training overrides}, ...]: an ensemble of 2+ models
    sparse_lr: float = 0.02  # adamw: the sparse weights' learning rate
    encoder_lr: float = 2e-5  # adamw: a fine-tuned encoder's learning rate
    weight_decay: float = 0.01  # adamw
    lr_decay: bool = False  # adamw: every learning rate decays linearly to 0 over the run
    max_train_len: int | None = None  # train on pairs whose longer side is at most this
    select: str | int | None = None  # best epoch on: dev (the dev split) | N (last N train
    # pairs) | None (the last epoch)

    RULES: ClassVar[dict[str, Rule]] = {
        "optimizer": Rule("str", choices=("lbfgs", "adam", "adamw")),
        "lr": _POS, "sparse_lr": _POS, "encoder_lr": _POS,
        "max_iter": _COUNT, "epochs": _COUNT, "batch_size": _COUNT, "decode_batch": _COUNT,
        "threads": _COUNT, "max_train_len": Rule("int", lo=1, nullable=True),
        "l2": _NONNEG, "cost_weight": _NONNEG, "fp_cost": _NONNEG, "fn_cost": _NONNEG,
        "nonident_fn_cost": _NONNEG, "weight_decay": _NONNEG,
        "gold_links": Rule("str", choices=("possible", "sure")),
        "directions": Rule("str", choices=("s2t", "t2s"), each=True),
        "lr_decay": Rule("bool"),
    }


@dataclass
class MonoData:
    """Which pairs train and score (configs/data/mono_*.yaml): the registry dataset `name`'s
    splits, or the user's annotated files (`*_path`: a jacana .json, a MultiMWA .tsv or
    [SRC, TGT, LINKS], `aligners.data.jacana.read_annotated`)."""

    name: str | None = None  # registry dataset (`aligners.data.datasets`)
    train_split: str = "train"
    dev_split: str | None = None  # also score this split (and `training.select: dev`)
    test_split: str | None = "test"  # None: only `extra_tests`
    train_path: str | list[str] | None = None
    dev_path: str | list[str] | None = None
    test_path: str | list[str] | None = None
    train_limit: int | None = None  # first N training pairs (smoke runs)
    dev_holdout: int | None = None  # train on all but the last N training pairs, score those
    test_limit: int | None = None  # first N pairs of each scored split
    extra_tests: list[str] = field(default_factory=list)  # "dataset:split" also scored

    RULES: ClassVar[dict[str, Rule]] = {
        "name": Rule("str", nullable=True),
        "train_split": Rule("str"),
        "dev_split": Rule("str", nullable=True),
        "test_split": Rule("str", nullable=True),
        "train_limit": Rule("int", lo=1, nullable=True),
        "dev_holdout": Rule("int", lo=1, nullable=True),
        "test_limit": Rule("int", lo=1, nullable=True),
        "extra_tests": Rule("str", each=True),
    }
