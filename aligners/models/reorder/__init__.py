"""Phrase-reordering classifiers p(orientation | phrase pair) (Alrajeh & Niranjan 2014).

`lexical` (Moses relative frequencies), `mlr` (primal MaxEnt, SGD), `dual_mlr` (dual MaxEnt,
exponentiated gradient with shrinking), `naive_bayes` (MAP and Bayesian predictive, with
mutual-information feature selection). All export through `aligners/export.py`
(kinds `reorder-*`); `aligners.load(folder)` returns a ready `Reorderer`.
"""

from aligners.models.reorder.dual_mlr import DualMLR
from aligners.models.reorder.lexical import LexicalReordering
from aligners.models.reorder.mlr import PrimalMLR
from aligners.models.reorder.naive_bayes import NaiveBayes, mutual_information
from aligners.models.reorder.reorderer import Reorderer, load_reorderer

__all__ = [
    "DualMLR",
    "LexicalReordering",
    "NaiveBayes",
    "PrimalMLR",
    "Reorderer",
    "load_reorderer",
    "mutual_information",
]
