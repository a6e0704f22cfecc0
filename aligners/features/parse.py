"""Sentence graphs from a real English parser: Link Grammar (Debian `link-grammar`,
`link-grammar-dictionaries-en`, `python3-link-grammar`).

A sentence of L words -> `SentenceGraph` (L words, L coarse POS tags, E edges): the
linkage's words minus the walls are the vertices (subscripts give the POS: n -> NN, v -> VB,
a -> JJ, e -> RB, a capitalised-word marker -> NNP, none -> FW); each link between two
vertices is an edge (left < right) labelled with the link type's upper-case prefix. Cost:
one parse per sentence (capped by `max_parse_time` seconds), memoised. `load_linkgrammar`
falls back to Debian's package path for a virtual environment without system packages.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["SentenceGraph", "LinkParser", "load_linkgrammar", "get_parser", "graph_from_links",
           "parse_all", "default_cache_dir",
           "split_sentences", "merge_graphs"]

_DEBIAN = Path("/usr/lib/python3/dist-packages/linkgrammar")
_SUBSCRIPT = re.compile(r"^(.+?)\.([a-z][a-z0-9\-*#!]*)$")
_MARKER = re.compile(r"\[!?<?([A-Z\-]*)>?\]$")
_POS = {"n": "NN", "v": "VB", "a": "JJ", "e": "RB", "g": "NN", "s": "NN", "p": "NN",
        "i": "VB", "w": "VB", "q": "VB"}


@dataclass(frozen=True)
class SentenceGraph:
    """Vertices `words` (L,) with `pos` (L,); `edges`: (left, right, label), left < right."""

    words: tuple[str, ...]
    pos: tuple[str, ...]
    edges: tuple[tuple[int, int, str], ...]


def load_linkgrammar():
    """The `linkgrammar` module, or None when Link Grammar is not installed."""
    try:
        import linkgrammar
        return linkgrammar
    except ImportError:
        pass
    init = _DEBIAN / "__init__.py"
    if not init.is_file() or sys.version_info[:2] != (3, 11):
        return None
    spec = importlib.util.spec_from_file_location("linkgrammar", init,
                                                  submodule_search_locations=[str(_DEBIAN)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["linkgrammar"] = module
    try:
        spec.loader.exec_module(module)
    except ImportError:
        del sys.modules["linkgrammar"]
        return None
    return module


def _vertex(word: str) -> tuple[str, str]:
    """Linkage word -> (surface word, coarse POS)."""
    pos = "FW"
    if len(word) > 2 and word.startswith("[") and word.endswith("]"):
        word = word[1:-1]  # unlinked word
    m = _MARKER.search(word)
    if m and m.start() > 0:
        if "CAPITALIZED" in m.group(1):
            pos = "NNP"
        word = word[: m.start()]
    m = _SUBSCRIPT.match(word)
    if m and word not in ("...",):
        word, sub = m.group(1), m.group(2)
        pos = _POS.get(sub[0], pos) if pos == "FW" else pos
    return word, pos


def graph_from_links(words: list[str], links: list[tuple[int, int, str]]) -> SentenceGraph:
    """Linkage words (with walls) and links (left index, right index, label) -> graph.

    Cost: O(L + E). Used by `LinkParser.parse`; separate so that it is testable without the
    parser."""
    keep = [i for i, w in enumerate(words) if w not in ("LEFT-WALL", "RIGHT-WALL")]
    new = {old: n for n, old in enumerate(keep)}
    verts = [_vertex(words[i]) for i in keep]
    edges = set()
    for a, b, label in links:
        if a in new and b in new and a != b:
            lo, hi = sorted((new[a], new[b]))
            m = re.match(r"[A-Z]+", label)
            edges.add((lo, hi, m.group(0) if m else label))
    return SentenceGraph(tuple(w for w, _ in verts), tuple(p for _, p in verts),
                         tuple(sorted(edges)))


class LinkParser:
    """Link Grammar English parser; `available` is False when it is not installed."""

    def __init__(self, *, max_parse_time: int = 2):
        self._lg = load_linkgrammar()
        self.available = self._lg is not None
        if self.available:
            self._dict = self._lg.Dictionary("en")
            self._opts = self._lg.ParseOptions(verbosity=0, max_parse_time=max_parse_time,
                                               linkage_limit=50, min_null_count=0,
                                               max_null_count=250)
        self.parse = lru_cache(maxsize=100_000)(self._parse)

    def _parse(self, text: str) -> SentenceGraph:
        if not self.available:
            raise RuntimeError("Link Grammar is not installed (apt-get install link-grammar "
                               "link-grammar-dictionaries-en python3-link-grammar)")
        tokens = text.split()
        if not tokens:
            return SentenceGraph((), (), ())
        sent = self._lg.Sentence(" ".join(tokens), self._dict, self._opts)
        try:
            linkage = next(iter(sent.parse()), None)
        except self._lg.LG_Error:  # e.g. LG_TimerExhausted past max_parse_time
            linkage = None
        if linkage is None:  # no parse in time: words without edges
            return SentenceGraph(tuple(tokens), ("FW",) * len(tokens), ())
        words = [linkage.word(i) for i in range(linkage.num_of_words())]
        clg = self._lg.Clinkgrammar
        links = [(clg.linkage_get_link_lword(linkage._obj, n),
                  clg.linkage_get_link_rword(linkage._obj, n),
                  clg.linkage_get_link_label(linkage._obj, n))
                 for n in range(linkage.num_of_links())]
        return graph_from_links(words, links)


@lru_cache(maxsize=1)
def get_parser() -> LinkParser:
    """The process-wide parser (dictionary loaded once)."""
    return LinkParser()


def parse_all(texts: list[str], *, cache: str | Path | None = None, log=None
              ) -> list[SentenceGraph]:
    """Graphs of `texts` (in order), reading and extending the JSON-lines file `cache`
    (one `{"text", "words", "pos", "edges"}` per sentence) so that a corpus is parsed once.
    Cost: one parse per sentence not in the cache."""
    known: dict[str, SentenceGraph] = {}
    path = Path(cache) if cache else None
    if path is not None and path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                r = json.loads(line)
                known[r["text"]] = SentenceGraph(tuple(r["words"]), tuple(r["pos"]),
                                                 tuple(tuple(e) for e in r["edges"]))
            except (json.JSONDecodeError, KeyError, TypeError):
                continue  # a torn last line from an interrupted run
    todo = [t for t in dict.fromkeys(texts) if t not in known]
    if todo:
        parser = get_parser()
        out = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            out = open(path, "a", encoding="utf-8")
        try:
            for n, t in enumerate(todo, 1):
                g = parser.parse(t)
                known[t] = g
                if out is not None:
                    out.write(json.dumps({"text": t, "words": g.words, "pos": g.pos,
                                          "edges": g.edges}, ensure_ascii=False) + "\n")
                if log is not None and n % 500 == 0:
                    log(f"parsed {n}/{len(todo)} sentences")
        finally:
            if out is not None:
                out.close()
    return [known[t] for t in texts]


def default_cache_dir() -> Path:
    """$ALIGNERS_CACHE, else ~/.cache/aligners (parses are cached under `parses/`)."""
    return Path(os.environ.get("ALIGNERS_CACHE", Path.home() / ".cache" / "aligners"))


_SPLIT = re.compile(r"(?<!\bMr\.)(?<!\bMrs\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bJr\.)(?<!\bNo\.)"
                    r"(?<=[.!?])\s+(?=[A-Z\"(])")


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph: split after . ! ? before an upper-case letter, quote or
    bracket (not after Mr. Mrs. Dr. St. Jr. No.). Cost: O(len(text))."""
    return [t for t in (x.strip() for x in _SPLIT.split(text)) if t]


def merge_graphs(graphs: list[SentenceGraph]) -> SentenceGraph:
    """One graph of a paragraph: the sentences' vertices in order, edges shifted (no edges
    between sentences). Cost: O(total size)."""
    words, pos, edges, off = [], [], [], 0
    for g in graphs:
        words += g.words
        pos += g.pos
        edges += [(a + off, b + off, lab) for a, b, lab in g.edges]
        off += len(g.words)
    return SentenceGraph(tuple(words), tuple(pos), tuple(edges))
