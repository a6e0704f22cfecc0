"""The Bayesian word aligner with collapsed Gibbs sampling (Östling & Tiedemann 2016)."""

from aligners.models.bayes.model import BayesAligner, BayesConfig, BayesMarginals, schedule

__all__ = ["BayesAligner", "BayesConfig", "BayesMarginals", "schedule"]
