"""The word-aligner family: IBM Model 1 (`ibm1`), the Och-Ney HMM (`hmm`), their joint
two-direction training by agreement (`agreement.WordAligner`), the sparse lexical M-step
(`lexical`) and the model folder (`saved`: `aligners.load(folder)` -> a ready aligner).
No Lightning in here; the data path is `aligners.data.bitext`.
"""

__all__: list[str] = []
