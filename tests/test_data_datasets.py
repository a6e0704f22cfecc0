"""Every registry dataset loads with the counts its SOURCE.md states (after lenient drops)."""

import pytest

from aligners.data.datasets import DATASETS, iter_parallel, last_dropped, load, lowercased
from aligners.data.paths import data_root
from aligners.data.types import AlignedPair, Alignment
from aligners.errors import AlignersInputError

pytestmark = pytest.mark.skipif(
    not (data_root() / "INDEX.md").exists(), reason="shipped data ../shared/data absent"
)

CASES = [
    (name, split)
    for name, spec in DATASETS.items()
    for split in spec.splits
    if not (name == "hansards-enfr" and split.startswith("train"))  # streamed, not loaded
]


@pytest.mark.parametrize(("name", "split"), CASES)
def test_counts_match_source_md(name, split):
    spec = DATASETS[name]
    want = spec.splits[split]
    items = load(name, split)
    assert len(items) == want.pairs
    if spec.kind == "alignment":
        if want.sure is not None:
            assert sum(len(p.alignment.sure) for p in items) == want.sure
            assert sum(len(p.alignment.possible - p.alignment.sure) for p in items) == want.possible
            for p in items:  # every link lies inside its sentence after loading
                assert all(i < len(p.src) and j < len(p.tgt) for i, j in p.alignment.possible)
        else:
            assert all(p.alignment is None for p in items)
        assert last_dropped(name, split) == want.dropped
        if want.src_tokens is not None:
            assert sum(len(p.src) for p in items) == want.src_tokens
            assert sum(len(p.tgt) for p in items) == want.tgt_tokens
    elif spec.kind == "labeled":
        assert sum(p.label for p in items) == want.positives
    elif spec.kind == "qa":
        assert sum(len(q.positives) for q in items) == want.positives


def test_trecqa_usable_pairs():
    qs = load("trecqa", "dev")
    usable = [q for q in qs if q.usable]
    assert (len(usable), sum(len(q.positives) + len(q.negatives) for q in usable)) == (69, 1343)
    assert sum(len(q.negatives) for q in qs) == 1100


def test_orientation_examples():
    # Hansards: English source; sentence 0001 is "2 ." / "2 ." with links 1-1 2-2 (1-based)
    p = load("hansards-enfr", "test")[0]
    assert p.src == ("2", ".") and p.id == "1" and p.alignment.sure == {(0, 0), (1, 1)}
    # Cs-En: the link file lists English first; we make Czech the source
    cs = load("pcedt-csen")[0]
    # first link line "0001 5 1 S" = English 5, Czech 1 -> (cs 0, en 4)
    assert (0, 4) in cs.alignment.sure and (4, 0) not in cs.alignment.possible
    # En-Hi: snum 68 (41st pair) loses its one out-of-range link; pair ids are snums
    enhi = load("wpt-enhi", "test")
    assert enhi[40].id == "68" and len(enhi[40].tgt) == 33
    # MultiMWA ids are kept
    assert load("multimwa-arxiv")[0].id is not None


def test_kftt_ascii_split_keeps_ideographic_space_tokens():
    pairs = load("kftt-jaen")
    assert "\u3000" in pairs[350].src and last_dropped("kftt-jaen", "test") == 0


def test_hansards_train_streams_200k():
    n = 0
    first = None
    for s, t in iter_parallel("hansards-enfr", "train"):
        if first is None:
            first = (s, t)
        n += 1
    assert n == 200_000 and first[0] and first[1]


def test_lowercased_pairs_and_lowercase_streams():
    """lowercased: both sides' tokens lowercased, links and id kept (hand-worked);
    iter_parallel(lowercase=True) lowercases a loaded split as well as the Hansards stream."""
    al = Alignment(sure=frozenset({(0, 1)}), possible=frozenset({(0, 1), (1, 0)}))
    (p,) = lowercased([AlignedPair(("The", "HOUSE"), ("La", "Chambre"), al, "7")])
    assert (p.src, p.tgt, p.alignment, p.id) == (("the", "house"), ("la", "chambre"), al, "7")
    mixed = next(s for s, _ in iter_parallel("hansards-enfr", "test")
                 if s != [w.lower() for w in s])
    low = [s for s, _ in iter_parallel("hansards-enfr", "test", lowercase=True)]
    assert [w.lower() for w in mixed] in low and mixed not in low
    first = next(iter_parallel("hansards-enfr", "train", lowercase=True))
    raw = next(iter_parallel("hansards-enfr", "train"))
    lowered = [[w.lower() for w in x] for x in raw]
    assert [list(x) for x in first] == lowered != [list(x) for x in raw]


def test_registry_errors():
    with pytest.raises(AlignersInputError, match="unknown dataset 'nope'"):
        load("nope")
    with pytest.raises(AlignersInputError, match="no split 'dev'"):
        load("wpt-roen", "dev")
    with pytest.raises(AlignersInputError, match="streamed, not loaded"):
        load("hansards-enfr", "train")
