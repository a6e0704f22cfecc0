"""The reorder family: phrase-reordering classifiers p(orientation | phrase pair) (Alrajeh &
Niranjan 2014). `lexical` (Moses relative frequencies), `mlr` (primal MaxEnt, SGD),
`dual_mlr` (dual MaxEnt, exponentiated gradient with shrinking), `naive_bayes` (MAP and
Bayesian predictive, with mutual-information feature selection). All export through
`aligners/export.py` (kinds `reorder-*`; `folder`: save and load); `aligners.load(folder)`
returns a ready `Reorderer`. Heavy names (torch, numba) are imported on first use.
"""

from aligners.families import Family, lazy_names

__all__ = ["FAMILY", "DualMLR", "LexicalReordering", "NaiveBayes", "PrimalMLR", "Reorderer",
           "mutual_information"]

FAMILY = Family(
    name="reorder",
    summary="phrase-orientation reordering: lexicalized, MaxEnt (primal, dual), naive Bayes",
    paper="Alrajeh & Niranjan 2014",
    verb="reorder",
    config="aligners.models.reorder.config:ReorderConfig",
    sections={"model": "aligners.models.reorder.config:ReorderConfig",
              "data": "aligners.models.reorder.config:ReorderData",
              "": "aligners.models.reorder.config:ReorderRun"},
    loader="aligners.models.reorder.folder:load_folder",
    kinds=("reorder-lexical", "reorder-naive-bayes", "reorder-primal-mlr", "reorder-dual-mlr"),
)

__getattr__ = lazy_names(__name__, {"DualMLR": "dual_mlr", "LexicalReordering": "lexical",
    "NaiveBayes": "naive_bayes", "mutual_information": "naive_bayes", "PrimalMLR": "mlr",
    "Reorderer": "folder"})
