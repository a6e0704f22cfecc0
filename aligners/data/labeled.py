"""Readers for the sentence-pair classification, QA and transliteration sets (no
alignments): MSRP TSV, RTE-1..3 XML (NLTK copy), RTE-5 XML (`rte5-xnlp`), the TREC QA
pseudo-XML of Wang et al. (2007) and the NEWS shared-task transliteration XML
(`news2012-translit-enhe`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from aligners.data.parallel import read_lines, read_xml
from aligners.errors import AlignersInputError

__all__ = ["LabeledPair", "NamePair", "QAQuestion", "TaggedSentence", "read_msrp",
           "read_news_translit", "read_rte", "read_rte5", "read_trecqa"]


@dataclass(frozen=True)
class LabeledPair:
    """Two raw (untokenised) texts and a 0/1 label (paraphrase / entailment)."""

    id: str
    text1: str
    text2: str
    label: int
    meta: dict[str, str] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class NamePair:
    """One name: `source` (English) and its `targets` (transliterations, >= 1)."""

    id: str
    source: str
    targets: tuple[str, ...]

    @property
    def target(self) -> str:
        return self.targets[0]


@dataclass(frozen=True)
class TaggedSentence:
    """A TREC QA sentence: tokens with POS, dependency label, 1-based head (0 = root), NER."""

    tokens: tuple[str, ...]
    pos: tuple[str, ...]
    deprel: tuple[str, ...]
    heads: tuple[int, ...]
    ner: tuple[str, ...]


@dataclass(frozen=True)
class QAQuestion:
    """One question with its answer-bearing (`positives`) and other (`negatives`) sentences."""

    qid: str
    question: TaggedSentence
    positives: tuple[TaggedSentence, ...]
    negatives: tuple[TaggedSentence, ...]

    @property
    def usable(self) -> bool:
        """True when the question has both a positive and a negative (MAP/MRR protocol)."""
        return bool(self.positives) and bool(self.negatives)


def read_msrp(path: str | Path) -> list[LabeledPair]:
    """Read an MSRP file: `Quality \\t id1 \\t id2 \\t string1 \\t string2` (no header; quotes
    are literal). Label 1 = paraphrase. Cost: O(file size)."""
    out = []
    for lineno, text in enumerate(read_lines(path), start=1):
        if not text.strip():
            continue
        cols = text.split("\t")
        if len(cols) != 5 or cols[0] not in ("0", "1"):
            if lineno == 1 and cols[0].startswith("Quality"):
                continue  # the original header line
            raise AlignersInputError(
                "expected 'label(0|1) \\t id1 \\t id2 \\t sentence1 \\t sentence2'",
                path=str(path),
                line=lineno,
            )
        out.append(LabeledPair(f"{cols[1]}-{cols[2]}", cols[3], cols[4], int(cols[0])))
    return out


_YES = {"TRUE": 1, "YES": 1, "FALSE": 0, "NO": 0}


def read_rte(path: str | Path) -> list[LabeledPair]:
    """Read an RTE XML file (`<pair id value|entailment task> <t/> <h/>`); label 1 = entails.

    Cost: O(file size). Malformed XML or a pair without t/h/label raises `AlignersInputError`.
    """
    root = read_xml(path, expected="an RTE entailment-corpus")
    out = []
    for n, pair in enumerate(root.iter("pair"), start=1):
        label = pair.get("entailment", pair.get("value", "")).upper()
        t, h = pair.find("t"), pair.find("h")
        if label not in _YES or t is None or h is None:
            raise AlignersInputError(
                f"pair {n} (id={pair.get('id')}): expected <t>, <h> and a YES/NO or TRUE/FALSE "
                "label", path=str(path),
            )
        meta = {k: v for k, v in pair.attrib.items() if k not in ("id", "entailment", "value")}
        out.append(
            LabeledPair(str(pair.get("id")), (t.text or "").strip(), (h.text or "").strip(),
                        _YES[label], meta)
        )
    return out


_RTE5 = {"ENTAILMENT": 1, "UNKNOWN": 0, "CONTRADICTION": 0}


def read_rte5(path: str | Path) -> list[LabeledPair]:
    """RTE-5 XML (`<pair id entailment=ENTAILMENT|UNKNOWN|CONTRADICTION task>` with `<t>`,
    `<h>`) -> `LabeledPair(id, t, h, label)`, two-way label 1 = ENTAILMENT; `meta` keeps the
    three-way label and the task (IE/IR/QA). Only `<t>` and `<h>` are read: the repository's
    extra evidence elements (`<a>`, `<t3>`, ...) carry information no RTE-5 system had.
    Cost: O(file size). A malformed pair raises `AlignersInputError` naming the file."""
    root = read_xml(path, expected="an RTE-5 file")
    out = []
    for n, pair in enumerate(root.iter("pair"), start=1):
        label = pair.get("entailment", "").upper()
        t, h = pair.findtext("t"), pair.findtext("h")
        if label not in _RTE5 or not (t or "").strip() or not (h or "").strip():
            raise AlignersInputError(f"pair {n} (id={pair.get('id')}): expected non-empty <t>, "
                                     "<h> and entailment=ENTAILMENT|UNKNOWN|CONTRADICTION",
                                     path=str(path))
        out.append(LabeledPair(str(pair.get("id")), " ".join(t.split()), " ".join(h.split()),
                               _RTE5[label], {"three_way": label, "task": pair.get("task", "")}))
    return out


def _sentence(lines: list[str], path: str, line: int) -> TaggedSentence:
    rows = [tuple(x.split("\t")) for x in lines]
    if len(rows) != 5 or len({len(r) for r in rows}) != 1:
        raise AlignersInputError(
            "expected 5 tab-separated rows of equal length (tokens, POS, deprel, heads, NER)",
            path=path, line=line,
        )
    try:
        heads = tuple(int(h) for h in rows[3])
    except ValueError:
        raise AlignersInputError("expected integer heads", path=path, line=line + 3) from None
    return TaggedSentence(rows[0], rows[1], rows[2], heads, rows[4])


def read_trecqa(path: str | Path) -> list[QAQuestion]:
    """Read a TREC QA `*.xml(.gz)` file (line-based pseudo-XML) -> one `QAQuestion` each.

    Cost: O(file size). An unexpected tag or a block of the wrong shape raises
    `AlignersInputError` naming the line.
    """
    name = str(path)
    out: list[QAQuestion] = []
    qid = block = tag = start = None
    got: dict[str, list[TaggedSentence]] = {}  # tag -> the sentences of the open question
    for lineno, text in enumerate(read_lines(path), start=1):
        if block is not None:
            if text == f"</{tag}>":
                got[tag].append(_sentence(block, name, start))
                block = None
            else:
                block.append(text)
            continue
        if text.startswith("<QApairs id="):
            qid = text.split("=", 1)[1].strip("'\">")
            got = {"question": [], "positive": [], "negative": []}
        elif text in ("<question>", "<positive>", "<negative>") and qid is not None:
            tag, block, start = text[1:-1], [], lineno + 1
        elif text == "</QApairs>" and got.get("question"):
            out.append(QAQuestion(qid, got["question"][-1], tuple(got["positive"]),
                                  tuple(got["negative"])))
            qid = None
        elif text.strip():
            raise AlignersInputError(
                f"unexpected line {text[:40]!r}; expected <QApairs>, <question>, <positive>, "
                "<negative> or their closing tags", path=name, line=lineno,
            )
    if qid is not None or block is not None:
        raise AlignersInputError("file ends inside a <QApairs> block", path=name)
    return out


def read_news_translit(path: str | Path) -> list[NamePair]:
    """Read a NEWS XML file (`<Name ID><SourceName>Abbas</SourceName><TargetName ID="1">
    עבאס</TargetName></Name>`; a name may list several `TargetName`s, all kept, first first)
    -> `NamePair`s in file order. Cost: O(file size). A malformed file or a name without a
    source or target raises `AlignersInputError` naming the file (and line for XML errors)."""
    root = read_xml(path, expected="a NEWS transliteration corpus")
    out = []
    for n, name in enumerate(root.iter("Name"), start=1):
        src = (name.findtext("SourceName") or "").strip()
        tgts = tuple(t for t in ((e.text or "").strip() for e in name.findall("TargetName")) if t)
        if not src or not tgts:
            raise AlignersInputError(f"name {n} (ID={name.get('ID')}): expected a non-empty "
                                     "<SourceName> and at least one <TargetName>", path=str(path))
        out.append(NamePair(str(name.get("ID", n)), src, tgts))
    if not out:
        raise AlignersInputError("no <Name> entries found", path=str(path))
    return out
