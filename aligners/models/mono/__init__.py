"""The mono family: monolingual aligners (Yao et al. 2013; Lan et al. 2021): the token CRF
(`crf`), the semi-Markov phrase CRF (`semicrf`; target states `states`, batches
`potentials`), the neural semi-CRF (`neural`: its MiniLM encoder needs the `neural` extra),
`MonoAligner`, the ready aligner (`aligner`), and `MonoEnsemble` (`ensemble`); defaults and
value rules in `config` (no torch). No Lightning here: `aligners.training.mono` trains these
modules. This package imports nothing heavy: import the modules themselves.
"""

from aligners.families import Family

__all__ = ["FAMILY"]

FAMILY = Family(
    name="mono",
    summary="monolingual aligners: token CRF, semi-Markov phrase CRF, neural semi-CRF, "
            "ensembles",
    paper="Yao et al. 2013; Lan et al. 2021",
    verb="monoalign",
    config="aligners.models.mono.config:MonoConfig",
    sections={"model": "aligners.models.mono.config:MonoConfig",
              "training": "aligners.models.mono.config:MonoTraining",
              "data": "aligners.models.mono.config:MonoData"},
    loader="aligners.models.mono.ensemble:load_any",
    kinds=("mono-token-crf", "mono-phrase-crf", "mono-neural-crf", "mono-ensemble"),
)
