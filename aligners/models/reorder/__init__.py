"""Phrase-reordering classifiers p(orientation | phrase pair) (Alrajeh & Niranjan 2014).

`lexical` (Moses relative frequencies), `mlr` (primal MaxEnt, SGD), `dual_mlr` (dual MaxEnt,
exponentiated gradient with shrinking), `naive_bayes` (MAP and Bayesian predictive, with
mutual-information feature selection); `config`: their defaults and value rules (no torch).
All export through `aligners/export.py` (kinds `reorder-*`); `aligners.load(folder)` returns
a ready `Reorderer`. The names below are imported on first use, so that reading `config`
(the CLI parser does) imports no torch.
"""

import importlib

__all__ = [
    "DualMLR",
    "LexicalReordering",
    "NaiveBayes",
    "PrimalMLR",
    "Reorderer",
    "load_reorderer",
    "mutual_information",
]

_LAZY = {"DualMLR": "dual_mlr", "LexicalReordering": "lexical", "NaiveBayes": "naive_bayes",
         "mutual_information": "naive_bayes", "PrimalMLR": "mlr", "Reorderer": "reorderer",
         "load_reorderer": "reorderer"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
