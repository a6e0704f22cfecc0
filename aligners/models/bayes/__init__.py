"""The Bayesian word aligner with collapsed Gibbs sampling (Östling & Tiedemann 2016)."""

from aligners.models.bayes.model import BayesAligner, BayesConfig, schedule
from aligners.models.bayes.slots import BayesMarginals

__all__ = ["BayesAligner", "BayesConfig", "BayesMarginals", "schedule"]
