"""Reader for RTE-5 (`rte5-xnlp`): `<pair id entailment=ENTAILMENT|UNKNOWN|CONTRADICTION
task>` with `<t>` and `<h>`; two-way label 1 = ENTAILMENT, 0 = UNKNOWN or CONTRADICTION.

Only `<t>` and `<h>` are read: the repository's extra evidence elements (`<a>`, `<t3>`, ...)
carry information no RTE-5 system had. Cost: O(file size).
"""

from __future__ import annotations

from pathlib import Path

from aligners.data.labeled import LabeledPair
from aligners.data.parallel import read_xml
from aligners.errors import AlignersInputError

__all__ = ["read_rte5"]

_LABELS = {"ENTAILMENT": 1, "UNKNOWN": 0, "CONTRADICTION": 0}


def read_rte5(path: str | Path) -> list[LabeledPair]:
    """RTE-5 XML -> `LabeledPair(id, t, h, label)`; `meta` keeps the three-way label and the
    task (IE/IR/QA). A malformed pair raises `AlignersInputError` naming the file."""
    root = read_xml(path, expected="an RTE-5 file")
    out = []
    for n, pair in enumerate(root.iter("pair"), start=1):
        label = pair.get("entailment", "").upper()
        t, h = pair.findtext("t"), pair.findtext("h")
        if label not in _LABELS or not (t or "").strip() or not (h or "").strip():
            raise AlignersInputError(f"pair {n} (id={pair.get('id')}): expected non-empty <t>, "
                                     "<h> and entailment=ENTAILMENT|UNKNOWN|CONTRADICTION",
                                     path=str(path))
        out.append(LabeledPair(str(pair.get("id")), " ".join(t.split()), " ".join(h.split()),
                               _LABELS[label], {"three_way": label,
                                                "task": pair.get("task", "")}))
    return out
