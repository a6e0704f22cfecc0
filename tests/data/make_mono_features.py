"""Regenerate `mono_features.safetensors`: the features of FIXTURE computed by the
reference (pre-vectorisation, commit 35405a9) code. Run from the repo root:
`python tests/data/make_mono_features.py` (only when the feature set changes on purpose)."""

import sys
from pathlib import Path

from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from aligners.models.mono.potentials import prepare  # noqa: E402

FIXTURE = [
    ("The cat sat on the mat .", "A cat is sitting on a mat ."),
    ("He passed away in 1,200 AD", "he died in twelve hundred"),
    ("New York is big , said Mr. Smith", "New York City is large"),
    ("John bought a new car yesterday", "John purchased an automobile"),
    ("the the the", "the"),
    ("Kids were running quickly", "children ran fast ; 3 dogs barked"),
    ("x", "y z"),
]
SETTINGS = [(3, 3, False), (3, 3, True), (1, 1, False), (2, 3, True)]


def compute() -> dict:
    out = {}
    for n, (s, t) in enumerate(FIXTURE):
        for Ls, Lt, cues in SETTINGS:
            ex = prepare(s.split(), t.split(), max_src_len=Ls, max_tgt_len=Lt,
                         phrase_cues=cues)
            out[f"{n}_{Ls}{Lt}{int(cues)}_emit"] = ex.emit
            out[f"{n}_{Ls}{Lt}{int(cues)}_null"] = ex.null
    return out


if __name__ == "__main__":
    save_file(compute(), str(Path(__file__).with_name("mono_features.safetensors")))
