"""The dataset registry: every corpus under `../shared/data`, with its orientation and splits.

`DATASETS[name]` is a `DatasetSpec` (folder, source side, splits, reader); `load(name,
split)` returns `AlignedPair`s with 0-based links (msrp, rte*, trecqa: `LabeledPair` /
`QAQuestion`). Gold sets with out-of-range links (En-Hi, De-En) are read leniently
(`last_dropped`); training text is streamed by `iter_parallel`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from aligners.data import a3, gold, jacana, labeled
from aligners.data.parallel import read_parallel
from aligners.data.paths import dataset_dir
from aligners.data.pharaoh import OutOfRangeLinksWarning, read_pharaoh
from aligners.data.types import AlignedPair, Alignment
from aligners.errors import AlignersInputError

__all__ = [
    "DATASETS",
    "DatasetSpec",
    "iter_parallel",
    "last_dropped",
    "load",
    "lowercased",
]


@dataclass(frozen=True)
class DatasetSpec:
    """One registry entry. `source`: the source side; `kind` = alignment|labeled|qa|names;
    `splits`: the split names (their counts, from SOURCE.md, are checked by the tests)."""

    name: str
    folder: str
    source: str
    splits: tuple[str, ...]
    loader: Callable[[Path, str, bool], list] = field(repr=False, compare=False)
    kind: str = "alignment"
    lenient: bool = False


_DROPPED: dict[tuple[str, str], int] = {}


def _pairs(texts, alignments, ids=None) -> list[AlignedPair]:
    """Pairs with ids `ids` (default: their 1-based line numbers)."""
    return [AlignedPair(tuple(s), tuple(t), al, str(n)) for n, (s, t), al in
            zip(ids or range(1, len(texts) + 1), texts, alignments, strict=True)]


def _lengths(texts) -> dict[str, list[int]]:
    """The readers' range-check keywords for these (source, target) token lists."""
    return {"src_lengths": [len(s) for s, _ in texts], "tgt_lengths": [len(t) for _, t in texts]}


def _naacl(src, tgt, wa):
    """WPT snum-wrapped text + NAACL links; file names are functions of the split."""

    def load_split(d: Path, split: str, lenient: bool) -> list[AlignedPair]:
        a, b = gold.read_snum_text(d / src(split)), gold.read_snum_text(d / tgt(split))
        snums = [s for s, _ in a]
        if snums != [s for s, _ in b]:
            raise AlignersInputError(
                f"sentence numbers of {d / src(split)} and {d / tgt(split)} differ")
        texts = [(x, y) for (_, x), (_, y) in zip(a, b, strict=True)]
        wa_file = wa(split)
        als = [None] * len(texts) if wa_file is None else gold.read_naacl(
            d / wa_file, snums=snums, lenient=lenient, **_lengths(texts))
        return _pairs(texts, als, snums)
    return load_split


def _text_gold(text, gold_file, read=gold.read_onebased, *, ascii_split=False):
    """A parallel text (one `src ||| tgt` file, or a (source, target) pair of files) and its
    gold links, read by `read` and checked against the text."""
    files = (text,) if isinstance(text, str) else text

    def load_split(d: Path, split: str, lenient: bool) -> list[AlignedPair]:
        texts = list(read_parallel(*(d / f for f in files), ascii_split=ascii_split))
        return _pairs(texts, read(d / gold_file, lenient=lenient, **_lengths(texts)))
    return load_split


def _csen(d: Path, split: str, lenient: bool) -> list[AlignedPair]:
    texts = list(read_parallel(d / "corpus.cz-en"))
    return _pairs(texts, gold.read_naacl(d / "czen.wal", snums=list(range(1, len(texts) + 1)),
                                         swap=True, lenient=lenient, **_lengths(texts)))


def _file(read, path, *, aligned=True, **kw):
    """A split in one file: `read(folder / path(split), **kw)`, with `lenient` passed on to
    the alignment readers (`aligned`)."""
    def load_split(d: Path, split: str, lenient: bool) -> list:
        return read(d / path(split), **kw, **({"lenient": lenient} if aligned else {}))
    return load_split


def _edbpp(d: Path, split: str, lenient: bool) -> list[AlignedPair]:
    """Sure links from `gold.SPLIT.sure.json`, S∪P from `gold.SPLIT.sure+poss.json`."""
    sure = jacana.read_jacana_json(d / f"gold.{split}.sure.json", lenient=lenient)
    union = jacana.read_jacana_json(d / f"gold.{split}.sure+poss.json", lenient=lenient)
    out = []
    for a, b in zip(sure, union, strict=True):
        if (a.id, a.src, a.tgt) != (b.id, b.src, b.tgt):
            raise AlignersInputError(f"pair {a.id} differs between the sure and sure+poss files",
                                     path=str(d))
        al = Alignment(a.alignment.sure, b.alignment.possible)
        out.append(AlignedPair(a.src, a.tgt, al, a.id))
    return out


_MSR = "msr-rte2006-aligned"
_EDB = "edinburghpp-paraphrase-alignment"
_SYN = "synthetic-phrases/gold.synthetic-phrases"
_MER = "jacana-msr-edinburgh-merged"
_DEV_TEST = {"train": "dev", "test": "test"}
_TRAIN_TEST = ("train", "test")
_SPECS = (
    # NAACL 1-based, English first; test.wa.nonullalign; train (the first 200k) and
    # train_full (all 1,130,104 WPT pairs) via iter_parallel
    DatasetSpec("hansards-enfr", "hansards-enfr-naacl2003", "en",
                ("test", "trial", "train", "train_full"),
                loader=_naacl(lambda s: f"{s}/{s}.e", lambda s: f"{s}/{s}.f", lambda s:
                              "test/test.wa.nonullalign" if s == "test" else f"{s}/{s}.wa")),
    DatasetSpec("wpt-roen", "wpt-roen-awesomealign", "ro", ("test",),
                loader=_text_gold("roen.src-tgt", "roen.gold")),
    # 1 gold link of snum 68 lies past the Hindi sentence (dropped); every Hindi position of
    # snum 68 is one too high in the distributed gold (kept)
    DatasetSpec("wpt-enhi", "wpt05-enhi", "en", ("test", "trial"), lenient=True,
                loader=_naacl(lambda s: f"{s}.eng", lambda s: f"{s}.hin",
                              lambda s: "test.eng.hin.wa" if s == "test" else None)),
    # the link file lists English first; swapped to Czech source
    DatasetSpec("pcedt-csen", "pcedt-csen-manual-align", "cs", ("test",), loader=_csen),
    # split on ASCII spaces: U+3000 is a token (5 of them), so no link is out of range;
    # str.split would leave 6 out of range
    DatasetSpec("kftt-jaen", "kftt-jaen-awesomealign", "ja", ("test",), lenient=True,
                loader=_text_gold("jaen.src-tgt", "jaen.gold", ascii_split=True)),
    DatasetSpec("tsinghua-zhen", "tsinghua-zhen-awesomealign", "zh", ("test",),
                loader=_text_gold("zhen.src-tgt", "zhen.gold")),
    # de-en.wa (0-based Pharaoh); 1 link of sentence 63 out of range
    DatasetSpec("europarl-deen", "europarl-deen-bicici", "de", ("test",), lenient=True,
                loader=_text_gold(("test.de", "test.en"), "de-en.wa", read_pharaoh)),
    # test.de-en + deen.talp (1-based, German first, ipj possible)
    DatasetSpec("rwth-deen-europarl", "rwth-deen-europarl", "de", ("test",),
                loader=_text_gold("test.de-en", "deen.talp")),
    # train = RTE2 dev, test = RTE2 test; jacana's annotator majority M, S and P collapsed
    DatasetSpec("msr06", _MSR, "T (text)", _TRAIN_TEST,
                loader=_file(jacana.read_jacana_json,
                             lambda s: f"converted/RTE2_{_DEV_TEST[s]}_M.align.json")),
    # RTE2_*_M.align.sure+poss.json with S and P kept apart
    DatasetSpec("msr06-sp", _MSR, "T (text)", _TRAIN_TEST,
                loader=_file(jacana.read_jacana_json, lambda s: "converted/"
                             f"RTE2_{_DEV_TEST[s]}_M.align.sure+poss.json", sure_plus_poss=True)),
    DatasetSpec("msr06-phrasal", _MSR, "T (text)", _TRAIN_TEST,
                loader=_file(jacana.read_jacana_json, lambda s: "converted/synthetic-phrases/"
                             f"RTE2_{_DEV_TEST[s]}_M.synthetic-phrases.json")),
    # Microsoft's A3 files, one per annotator, original tokenisation; dev-C has 5,888 S
    # (SOURCE.md says 5,887: its last entry lacks ')')
    DatasetSpec("msr06-orig", _MSR, "T (text)",
                ("dev-A", "dev-B", "dev-C", "test-A", "test-B", "test-C"),
                loader=_file(a3.read_a3,
                             lambda s: f"orig/RTE2_{s.replace('-', '_')}.align.txt")),
    # sure from *.sure.json, possible = *.sure+poss.json minus sure
    DatasetSpec("edbpp", _EDB, "jacana 'source'", _TRAIN_TEST, loader=_edbpp),
    DatasetSpec("edbpp-phrasal", _EDB, "jacana 'source'", _TRAIN_TEST,
                loader=_file(jacana.read_jacana_json, lambda s: f"{_SYN}.{s}.sure.json")),
    # overlaps the msr06/edbpp test sets: never mix with them
    DatasetSpec("msr-edb-merged", _MER, "jacana 'source'", _TRAIN_TEST,
                loader=_file(jacana.read_jacana_json, lambda s: f"msr.edinburgh.{s}.json")),
    DatasetSpec("msr-edb-merged-phrasal", _MER, "jacana 'source'", _TRAIN_TEST,
                loader=_file(jacana.read_jacana_json,
                             lambda s: f"msr.edinburgh.synthetic-phrases.{s}.json")),
    DatasetSpec("multimwa-wiki", "multimwa-lan2021", "sentence 1", ("train", "dev", "test"),
                loader=_file(jacana.read_multimwa, lambda s: f"wiki-{s}.tsv")),
    DatasetSpec("multimwa-newsela", "multimwa-lan2021", "sentence 1", ("test",),
                loader=_file(jacana.read_multimwa, lambda s: f"newsela-{s}.tsv")),
    DatasetSpec("multimwa-arxiv", "multimwa-lan2021", "sentence 1", ("test",),
                loader=_file(jacana.read_multimwa, lambda s: f"arxiv-{s}.tsv")),
    DatasetSpec("msrp", "msrp-paraphrase", "string 1", _TRAIN_TEST, kind="labeled",
                loader=_file(labeled.read_msrp, lambda s: f"msr_paraphrase_{s}.txt",
                             aligned=False)),
    # pairs = questions
    DatasetSpec("trecqa", "trecqa-wang2007", "question",
                ("train", "train-less-than-40", "dev", "dev-less-than-40", "test-less-than-40"),
                kind="qa",
                loader=_file(labeled.read_trecqa, lambda s: f"data/{s}.xml.gz", aligned=False)),
    # pairs = names (NamePair), English source, Hebrew target
    DatasetSpec("news2012-translit-enhe", "news2012-translit-enhe", "SourceName",
                ("train", "dev"), kind="names",
                loader=_file(labeled.read_news_translit, lambda s: f"{s}.xml", aligned=False)),
    DatasetSpec("rte5-xnlp", "rte5-xnlp", "t (text)", ("dev", "test"), kind="labeled",
                loader=_file(labeled.read_rte5, lambda s: f"RTE5_{s}.xml", aligned=False)),
    *(DatasetSpec(name, "rte1-3-nltk", "t (text)", ("dev", "test"), kind="labeled",
                  loader=_file(labeled.read_rte, lambda s, n=name: f"{n}_{s}.xml",
                               aligned=False))
      for name in ("rte1", "rte2", "rte3")),
)

DATASETS: dict[str, DatasetSpec] = {s.name: s for s in _SPECS}


def load(name: str, split: str | None = None, *, lenient: bool = False) -> list:
    """Load `split` of dataset `name` (default: its only split, or `test`).

    Returns `AlignedPair`s (0-based links, source = `DATASETS[name].source`), or
    `LabeledPair`s / `QAQuestion`s for kind labeled / qa. Sets marked `lenient` in the
    registry always drop out-of-range links; the count is `last_dropped(name, split)`.
    Cost: O(size of the split); the Hansards training text is refused (use `iter_parallel`).
    """
    if name not in DATASETS:
        raise AlignersInputError(f"unknown dataset {name!r}; expected one of {sorted(DATASETS)}")
    spec = DATASETS[name]
    if split is None:
        split = next(iter(spec.splits)) if len(spec.splits) == 1 else "test"
    if split not in spec.splits:
        raise AlignersInputError(
            f"dataset {name!r} has no split {split!r}; expected one of {list(spec.splits)}"
        )
    if name == "hansards-enfr" and split in _HANSARDS_TRAIN:
        raise AlignersInputError(
            f"the Hansards training text ({split}) is streamed, not loaded: use "
            f"aligners.data.datasets.iter_parallel('hansards-enfr', {split!r}) or a Corpus"
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = spec.loader(dataset_dir(spec.folder), split, lenient or spec.lenient)
    out_of_range = [w for w in caught if isinstance(w.message, OutOfRangeLinksWarning)]
    _DROPPED[(name, split)] = sum(w.message.dropped for w in out_of_range)
    for w in caught:
        if not (spec.lenient and w in out_of_range):  # (a lenient set drops them silently)
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return out


# Hansards training splits -> file stem: the first 200k pairs, and the full WPT set
_HANSARDS_TRAIN = {"train": "hansards.train200k", "train_full": "hansards.train"}


def last_dropped(name: str, split: str) -> int:
    """Links dropped as out of range by the last `load(name, split)` (0 before any load)."""
    return _DROPPED.get((name, split), 0)


def iter_parallel(
    name: str, split: str = "train", *, lowercase: bool = False
) -> Iterator[tuple[list[str], list[str]]]:
    """Stream `(source_tokens, target_tokens)` of a split without holding it in memory."""
    if name == "hansards-enfr" and split in _HANSARDS_TRAIN:
        d, stem = dataset_dir(DATASETS[name].folder) / "train", _HANSARDS_TRAIN[split]
        return read_parallel(d / f"{stem}.e.gz", d / f"{stem}.f.gz", lowercase=lowercase)
    pairs = load(name, split)
    return ((list(p.src), list(p.tgt)) for p in (lowercased(pairs) if lowercase else pairs))


def lowercased(pairs: list) -> list:
    """`AlignedPair`s with both sides' tokens lowercased, links unchanged (gold text under
    the literature's Hansards protocol: Liang et al. 2006, Bansal et al. 2011 sec. 7.2)."""
    return [AlignedPair(tuple(w.lower() for w in p.src), tuple(w.lower() for w in p.tgt),
                        p.alignment, p.id) for p in pairs]
