"""WordNet 3.0 relations read straight from the Princeton database files (no NLTK).

Files from `$WNSEARCHDIR`, else `/usr/share/wordnet` (Debian `wordnet-base`); without them
every relation is False (one warning). Relations of a directed word pair after morphy
base forms: synonym, hypernym / hyponym (up to 2 steps), antonym, derivation,
entailment, similar-to. Cost: loading reads the files once; synset lines are parsed on
first use; queries are memoised dict look-ups.
"""

import os
import warnings
from functools import lru_cache
from pathlib import Path

__all__ = ["WordNet", "RELATIONS", "get_wordnet", "wordnet_dir"]

RELATIONS = ("synonym", "hypernym", "hyponym", "antonym", "derivation", "entailment", "similar")
_POS = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
# Morphy detachment rules of the WordNet library (morph.c), per part of speech.
_SUFFIXES = {
    "n": [("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
          ("men", "man"), ("ies", "y")],
    "v": [("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
          ("ing", "e"), ("ing", "")],
    "a": [("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
    "r": [],
}
_PTR = {"@": "hypernym", "@i": "hypernym", "~": "hyponym", "~i": "hyponym", "!": "antonym",
        "+": "derivation", "*": "entailment", "&": "similar"}


def wordnet_dir() -> Path | None:
    """The database folder ($WNSEARCHDIR, else /usr/share/wordnet), or None if absent."""
    for cand in (os.environ.get("WNSEARCHDIR"), "/usr/share/wordnet", "/usr/share/wordnet/dict"):
        if cand and (Path(cand) / "data.noun").is_file() and (Path(cand) / "index.noun").is_file():
            return Path(cand)
    return None


class WordNet:
    """Offline WordNet relation oracle. `WordNet(None)` is the empty fallback."""

    def __init__(self, root: Path | None):
        self._index: dict[tuple[str, str], tuple[str, ...]] = {}  # (lemma, pos) -> synset keys
        self._exc: dict[tuple[str, str], tuple[str, ...]] = {}
        self._data: dict[str, bytes] = {}  # pos -> the raw data.<pos> file
        if root is None:
            return
        for pos, name in _POS.items():
            for line in (root / f"index.{name}").read_text(encoding="latin-1").splitlines():
                if not line.startswith(" "):  # (the licence header)
                    f = line.split()
                    n_syn, at = int(f[2]), 6 + int(f[3])  # the synset offsets follow the pointers
                    self._index[(f[0], pos)] = tuple(pos + o for o in f[at: at + n_syn])
            self._data[pos] = (root / f"data.{name}").read_bytes()
            exc = root / f"{name}.exc"
            if exc.is_file():
                for line in exc.read_text(encoding="latin-1").splitlines():
                    parts = line.split()
                    if len(parts) >= 2:
                        self._exc[(parts[0], pos)] = tuple(parts[1:])

    @lru_cache(maxsize=200_000)  # noqa: B019
    def _synset(self, key: str) -> tuple[tuple[str, ...], tuple[tuple[str, str, int, int], ...]]:
        """(lemmas, pointers (rel, target key, source word, target word)) of synset `key`
        ("n1234"), parsed on first use: a synset's key is the byte offset of its line in
        data.<pos> (the database's own random-access layout), so loading only reads the
        files and a query parses the few lines it needs."""
        data = self._data.get(key[0])
        if data is None:
            return (), ()
        start = int(key[1:])
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        gloss = data.find(b" | ", start, end)  # only the fields before the gloss are parsed
        f = data[start: end if gloss < 0 else gloss].decode("latin-1").split()
        if not f or f[0] != key[1:]:
            return (), ()  # not the start of a synset line
        n_words = int(f[3], 16)
        lemmas = tuple(f[4 + 2 * i].lower() for i in range(n_words))
        at = 4 + 2 * n_words
        ptrs = []
        for p in range(int(f[at])):
            sym, off, ppos, st = f[at + 1 + 4 * p: at + 5 + 4 * p]
            rel = _PTR.get(sym)
            if rel is not None:
                ppos = "a" if ppos == "s" else ppos
                ptrs.append((rel, ppos + off, int(st[:2], 16), int(st[2:], 16)))
        return lemmas, tuple(ptrs)

    @lru_cache(maxsize=200_000)  # noqa: B019 - one instance per process
    def base_forms(self, word: str) -> tuple[tuple[str, str], ...]:
        """(lemma, pos) pairs of `word` found in the index (morphy: exceptions, then suffixes)."""
        w = word.lower()
        out = []
        for pos in _POS:
            cands = [w, *self._exc.get((w, pos), ())]
            cands += [w[: -len(s)] + r for s, r in _SUFFIXES[pos]
                      if w.endswith(s) and len(w) > len(s)]
            out += [(c, pos) for c in dict.fromkeys(cands) if (c, pos) in self._index]
        return tuple(out)

    @lru_cache(maxsize=200_000)  # noqa: B019
    def synsets(self, word: str) -> frozenset[str]:
        """All synset keys of `word` in any part of speech."""
        return frozenset(k for lp in self.base_forms(word) for k in self._index[lp])

    @lru_cache(maxsize=500_000)  # noqa: B019
    def _word_closure(self, word: str, rel: str, depth: int) -> frozenset[str]:
        """The synsets reached from those of `word` by 1..`depth` steps of `rel`, memoised
        per word (a sentence pair asks for the same source word against every target word)."""
        seen, frontier = set(), set(self.synsets(word))
        for _ in range(depth):
            frontier = {t for k in frontier for r, t, _, _ in self._synset(k)[1] if r == rel} - seen
            seen |= frontier
        return frozenset(seen)

    @lru_cache(maxsize=200_000)  # noqa: B019
    def _bases(self, word: str) -> frozenset[str]:
        """The lemmas of `base_forms(word)` (any part of speech), memoised per word."""
        return frozenset(x for x, _ in self.base_forms(word))

    @lru_cache(maxsize=500_000)  # noqa: B019
    def _related_lemmas(self, word: str, rel: str) -> frozenset[str]:
        """Lemmas reached by lexical or semantic pointers of type `rel` (one step); memoised."""
        out, bases = set(), self._bases(word)
        for k in self.synsets(word):
            lemmas, ptrs = self._synset(k)
            for r, t, s, _ in ptrs:  # s: the source word (0: the whole synset)
                if r == rel and (s == 0 or (s <= len(lemmas) and lemmas[s - 1] in bases)):
                    out.update(self._synset(t)[0])
        return frozenset(out)

    @lru_cache(maxsize=500_000)  # noqa: B019
    def relations(self, a: str, b: str) -> tuple[bool, ...]:
        """One bool per name in RELATIONS for the (directed) word pair `a -> b` (hypernyms and
        hyponyms up to 2 steps)."""
        sa, sb = self.synsets(a), self.synsets(b)
        if not sa or not sb:  # (always so without the database)
            return (False,) * len(RELATIONS)
        bases_b = self._bases(b)
        return (
            bool(sa & sb),
            bool(self._word_closure(a, "hypernym", 2) & sb),
            # hyponyms of a within 2 steps meet sb <=> hypernyms of b within 2
            # steps meet sa: the database's hypernym and hyponym pointers mirror each other
            # (tests/test_features_wordnet.py checks every synset), and the hypernym closure
            # is narrow where the hyponym one fans out (parses far fewer synset lines)
            bool(self._word_closure(b, "hypernym", 2) & sa),
            bool(self._related_lemmas(a, "antonym") & bases_b),
            bool(self._related_lemmas(a, "derivation") & bases_b),
            bool(self._word_closure(a, "entailment", 1) & sb),
            bool(self._word_closure(a, "similar", 1) & sb),
        )

    @classmethod
    def cache_clear(cls) -> None:
        """Forget every memoised look-up (cold-start timings, tests)."""
        for fn in (cls.base_forms, cls.synsets, cls.relations, cls._word_closure,
                   cls._related_lemmas, cls._synset, cls._bases):
            fn.cache_clear()


@lru_cache(maxsize=1)
def get_wordnet() -> WordNet:
    """The process-wide WordNet (empty fallback with a warning when the files are absent)."""
    root = wordnet_dir()
    if root is None:
        warnings.warn("WordNet database not found (apt-get install wordnet-base); "
                      "WordNet features are off", stacklevel=2)
    return WordNet(root)
