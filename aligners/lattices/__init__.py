"""Lattices: potentials -> log_partition / marginals / argmax / sample; no parameters.

Chain lattices with torch-struct 0.5 conventions (see each module's docstring):
``linear_chain`` (``(B, N-1, C, C)``), ``semimarkov`` (``(B, N-1, K, C, C)``) and their
drop-in distribution classes in ``distributions``.
"""

from aligners.lattices.distributions import LinearChainCRF, SemiMarkovCRF, StructDistribution
from aligners.lattices.linear_chain import LinearChain
from aligners.lattices.semimarkov import SemiMarkov

__all__ = ["LinearChain", "SemiMarkov", "LinearChainCRF", "SemiMarkovCRF", "StructDistribution"]
