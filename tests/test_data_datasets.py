"""Every registry dataset loads with the counts its SOURCE.md states (after lenient drops)."""

from dataclasses import dataclass

import pytest

from aligners.data.datasets import DATASETS, iter_parallel, last_dropped, load, lowercased
from aligners.data.paths import data_root
from aligners.data.types import AlignedPair, Alignment
from aligners.errors import AlignersInputError

pytestmark = pytest.mark.skipif(
    not (data_root() / "INDEX.md").exists(), reason="shipped data ../shared/data absent"
)


@dataclass(frozen=True)
class SplitCounts:
    """Expected counts of one split (from SOURCE.md), after lenient dropping.

    `sure` = sure links, `possible` = possible-only links (P \\ S), `dropped` = links outside
    their sentence removed by the lenient reader; `positives` for labelled sets.
    """

    pairs: int
    sure: int | None = None
    possible: int | None = None
    dropped: int = 0
    src_tokens: int | None = None
    tgt_tokens: int | None = None
    positives: int | None = None


_S = SplitCounts
# dataset -> split -> its counts in SOURCE.md
COUNTS = {
    "hansards-enfr": {"test": _S(447, 4038, 13400), "trial": _S(37, 338, 1446),
                      "train": _S(200_000), "train_full": _S(1_130_104)},
    "wpt-roen": {"test": _S(248, 6198, 0, 0, 5495, 5639)},
    "wpt-enhi": {"test": _S(90, 1408, 0, 1), "trial": _S(25)},
    "pcedt-csen": {"test": _S(515, 10934, 4510, 0, 12201, 12697)},
    "kftt-jaen": {"test": _S(582, 13562, 0, 0, 14447, 12608)},
    "tsinghua-zhen": {"test": _S(450, 11238, 178, 0, 11712, 14850)},
    "europarl-deen": {"test": _S(100, 1232, 0, 1, 1445, 1478)},
    "rwth-deen-europarl": {"test": _S(508, 9613, 921, 0, 9945, 10413)},
    "msr06": {"train": _S(800, 5791, 0), "test": _S(800, 5697, 0)},
    "msr06-sp": {"train": _S(800, 5321, 879), "test": _S(800, 5273, 688)},
    "msr06-phrasal": {"train": _S(800, 7547, 0), "test": _S(800, 7583, 0)},
    "msr06-orig": {"dev-A": _S(800, 5983, 2154), "dev-B": _S(800, 6022, 2015),
                   "dev-C": _S(800, 5888, 2733), "test-A": _S(800, 5690, 1564),
                   "test-B": _S(800, 5719, 2257), "test-C": _S(800, 5728, 2197)},
    "edbpp": {"train": _S(714, 13314, 2532), "test": _S(306, 5766, 871)},
    "edbpp-phrasal": {"train": _S(714, 18770, 0), "test": _S(306, 8440, 0)},
    "msr-edb-merged": {"train": _S(2096, 24375, 0), "test": _S(524, 6193, 0)},
    "msr-edb-merged-phrasal": {"train": _S(2096, 34083, 0), "test": _S(524, 8221, 0)},
    "multimwa-wiki": {"train": _S(2514, 70072, 0), "dev": _S(533, 15082, 0),
                      "test": _S(1052, 29768, 0)},
    "multimwa-newsela": {"test": _S(500, 9268, 2045)},
    "multimwa-arxiv": {"test": _S(200, 5143, 43)},
    "msrp": {"train": _S(4076, positives=2753), "test": _S(1725, positives=1147)},
    "trecqa": {"train": _S(94, positives=475), "train-less-than-40": _S(94, positives=348),
               "dev": _S(82, positives=264), "dev-less-than-40": _S(82, positives=222),
               "test-less-than-40": _S(100, positives=284)},
    "news2012-translit-enhe": {"train": _S(9501), "dev": _S(1000)},
    "rte5-xnlp": {"dev": _S(600, positives=299), "test": _S(600, positives=300)},
    "rte1": {"dev": _S(567, positives=283), "test": _S(800, positives=400)},
    "rte2": {"dev": _S(400, positives=210), "test": _S(800, positives=400)},
    "rte3": {"dev": _S(800, positives=412), "test": _S(800, positives=410)},
}

CASES = [
    (name, split)
    for name, spec in DATASETS.items()
    for split in spec.splits
    if not (name == "hansards-enfr" and split.startswith("train"))  # streamed, not loaded
]


def test_every_split_has_its_counts():
    assert {name: list(spec.splits) for name, spec in DATASETS.items()} == {
        name: list(splits) for name, splits in COUNTS.items()}


@pytest.mark.parametrize(("name", "split"), CASES)
def test_counts_match_source_md(name, split):
    spec = DATASETS[name]
    want = COUNTS[name][split]
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
