"""The bayesian family: collapsed Gibbs sampling of IBM1 -> HMM -> HMM+fertility (Östling &
Tiedemann 2016). Heavy names (numba kernels) are imported on first use."""

from aligners.families import Family, lazy_names

__all__ = ["FAMILY", "BayesAligner", "BayesConfig", "schedule"]

FAMILY = Family(
    name="bayesian",
    summary="Bayesian IBM1 -> HMM -> fertility by collapsed Gibbs sampling (as eflomal)",
    paper="Östling & Tiedemann 2016",
    verb="align",
    config="aligners.models.bayesian.config:BayesConfig",
    model="aligners.models.bayesian.folder:BayesianAlignment",
    read_kinds=("bayes-aligner",),  # folders written before the one-name records
    order=3,
)

__getattr__ = lazy_names(__name__, {"BayesAligner": "model", "schedule": "model",
                                    "BayesConfig": "config"})
