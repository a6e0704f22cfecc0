"""LCLR tasks over sentence graphs: paraphrase identification (Chang et al. 2010, section 4)
and entailment (section 5.2: the same without edge deletion).

Shapes: sentence 1 (L1 vertices, E1 edges) and sentence 2 (L2, E2) from
`aligners.features.parse` (Link Grammar). Variables (N <= P + L1 + L2 + Q + E1 + E2):
- word-mapping h_{v1,v2} for the P candidate pairs (pruned to lexically related pairs:
  same lower-cased form or lemma, a WordNet relation, equal numbers, edit similarity >= 0.6
  or trigram Dice >= 0.5; an unrelated pair could only be chosen with a learned bonus for
  unrelated words, which the candidates' features cannot express anyway);
- word-deletion h_{v1,*}, h_{*,v2} for every vertex;
- edge-mapping h_{e1,e2} for the Q edge pairs whose endpoints are candidate pairs (either
  orientation; edges are undirected);
- edge-deletion h_{e1,*}, h_{*,e2} for every edge (paraphrase only).
Constraints: eqs. (6)-(7) (every vertex mapped once or deleted), (8)-(9) for edges (<= 1
when edge deletion is off), (10)-(11) (an edge map is on iff both its word maps are on).
Features: WordNet relations, string/edit similarity, POS pairs, named entities (Link Grammar's
capitalised-word class and capitalisation), numbers, stop words, dependency (link) labels;
with `node_info` (the paper's NODE-INFO for edge maps, Table 2) an edge map also carries its
two word maps' features (not the POS pair), each scaled by that word pair's similarity
(the largest of identical / stem / number / synonym / edit similarity); duplicate names add;
every per-variable feature is scaled by 10 / (L1 + L2) so that f does not grow with length.
Cost: O(L1 L2 + E1 E2) per instance; inference is one HiGHS ILP.
"""

from __future__ import annotations

import numpy as np

from aligners.errors import AlignersInputError
from aligners.features.parse import SentenceGraph, get_parser, merge_graphs, split_sentences
from aligners.features.string_sim import (
    STOPWORDS,
    TOKEN_PAIR_FEATURES,
    is_punct,
    normalise_number,
    word_pair_features,
)
from aligners.ilp import LinearConstraints, solve_ilp
from aligners.models.lclr.model import FeatureIndex, LatentInstance, LatentTask

__all__ = ["ParaphraseTask", "EntailmentTask", "HEURISTIC", "negated", "feature_group"]

_COL = {n: k for k, n in enumerate(TOKEN_PAIR_FEATURES)}
_SIM = ("lower_identical", "stem_identical", "number_match", "wn_synonym", "edit_sim")
_LEXICAL = ("lower_identical", "stem_identical", "number_match", "wn_synonym", "wn_hypernym",
            "wn_hyponym", "wn_derivation", "wn_entailment", "wn_similar")

# The two-stage system's fixed objective (the "task-specific heuristic"): weights on named
# features; every other feature weighs 0 (a deletion then costs nothing).
HEURISTIC = {"wm": -0.3, "wm|lower_identical": 1.0, "wm|stem_identical": 0.6,
             "wm|wn_synonym": 0.6, "wm|wn_hypernym": 0.3, "wm|wn_hyponym": 0.3,
             "wm|wn_derivation": 0.3, "wm|number_match": 0.8, "wm|edit_sim": 0.3,
             "em": 0.2, "em|same_label": 0.3}


_NEG = frozenset({"not", "n't", "no", "never", "none", "nobody", "nothing", "neither", "nor",
                  "without", "cannot", "nowhere", "hardly"})


def negated(g: SentenceGraph) -> frozenset[int]:
    """Vertices of `g` under a negation marker: linked to one, or one of the two words
    before them is one (the paper's Neg identifiers, Table 2). Cost: O(L + E)."""
    marks = {i for i, w in enumerate(g.words) if w.lower() in _NEG}
    out = {i for i in range(len(g.words)) if marks & {i - 1, i - 2}}
    for a, b, _ in g.edges:
        if a in marks:
            out.add(b)
        if b in marks:
            out.add(a)
    return frozenset(out - marks)


def feature_group(name: str) -> str | None:
    """The ablation group (`FEATURE_GROUPS`) of a feature name (a NODE-INFO copy `em|node|X`:
    that of `wm|X`); None: structural counts (wm, em, del, ed, bias, len_diff), never
    dropped."""
    if name.startswith("em|node|"):
        return feature_group("wm|" + name[len("em|node|"):])
    parts = name.split("|")
    if len(parts) < 2 or parts[0] not in ("wm", "em", "del", "ed"):
        return None
    if "pos" in parts or parts[-1] == "same_pos":
        return "pos"
    last = parts[-1]
    if last.startswith("wn_"):
        return "wordnet"
    if last.startswith("neg_"):
        return "neg"
    if last.startswith("ne"):
        return "ne"
    if parts[0] in ("em", "ed"):
        return "dep" if last not in ("1", "2") else None
    if last in ("1", "2"):
        return None
    return "string"


def _wm_feats(wa: str, pa: str, first_a: bool, wb: str, pb: str, first_b: bool, x,
              negs: int, neg_mismatch: bool) -> list[tuple[str, float]]:
    """A word map's features: count, POS pair, word-pair similarities `x`, same POS, NE, Neg
    (`negs` = how many of the two words are negated)."""
    feats = [("wm", 1.0), (f"wm|pos|{pa}|{pb}", 1.0)]
    feats += [(f"wm|{n}", x[_COL[n]]) for n in TOKEN_PAIR_FEATURES]
    if pa == pb:
        feats.append(("wm|same_pos", 1.0))
    ne_a, ne_b = _ne(wa, pa, first_a), _ne(wb, pb, first_b)
    if ne_a and ne_b:
        feats.append(("wm|ne_both", 1.0))
    elif ne_a or ne_b:
        feats.append(("wm|ne_one", 1.0))
    if neg_mismatch:  # Neg (Table 2): one side negated
        feats.append(("wm|neg_mismatch", 1.0))
    elif negs == 2:
        feats.append(("wm|neg_both", 1.0))
    return feats


def _ne(word: str, pos: str, first: bool) -> bool:
    return pos == "NNP" or (not first and word[:1].isupper() and word[1:2].islower())


class ParaphraseTask(LatentTask):
    """Word/edge mapping and deletion variables over two Link Grammar graphs."""

    name = "paraphrase"
    edge_deletion = True
    text_deletion = True  # word-deletion variables for sentence 1 too
    split_sentences = False  # MSRP: one sentence per side

    def __init__(self, features: FeatureIndex | None = None, *, graphs: dict | None = None,
                 node_info: bool = False, drop_features=()):
        self.features = features if features is not None else FeatureIndex()
        self.graphs: dict[str, SentenceGraph] = graphs if graphs is not None else {}
        self.node_info = bool(node_info)
        self.drop_features = tuple(drop_features)

    def config(self) -> dict:
        return {"node_info": self.node_info, "drop_features": list(self.drop_features)}

    def graph(self, text: str) -> SentenceGraph:
        g = self.graphs.get(text)
        if g is None:
            parser = get_parser()
            if not parser.available:
                raise AlignersInputError("the paraphrase/entailment tasks need Link Grammar "
                                         "(apt-get install link-grammar "
                                         "link-grammar-dictionaries-en python3-link-grammar)")
            parts = (split_sentences(text) or [text]) if self.split_sentences else [text]
            g = merge_graphs([parser.parse(t) for t in parts])
            self.graphs[text] = g
        return g

    def heuristic_weights(self) -> np.ndarray:
        ids = {self.features.index(k): v for k, v in HEURISTIC.items()}
        w = np.zeros(len(self.features))
        for i, v in ids.items():
            if i >= 0:
                w[i] = v
        return w

    def instance(self, text1: str, text2: str) -> LatentInstance:
        g1, g2 = self.graph(text1), self.graph(text2)
        if not g1.words or not g2.words:
            raise ValueError("empty sentence")
        return self.build(g1, g2)

    def build(self, g1: SentenceGraph, g2: SentenceGraph) -> LatentInstance:
        """Variables, features and (lazily) constraints of one pair of graphs."""
        idx = self.features.index
        drop = set(self.drop_features)
        scale = 10.0 / (len(g1.words) + len(g2.words))
        neg1, neg2 = negated(g1), negated(g2)
        rows, cols, vals = [], [], []
        names: list[str] = []
        kinds: list[tuple] = []

        def var(kind: tuple, label: str, feats: list[tuple[str, float]]) -> int:
            s = len(kinds)
            kinds.append(kind)
            names.append(label)
            for f, v in feats:
                if drop and feature_group(f) in drop:
                    continue
                c = idx(f)
                if c >= 0 and v != 0.0:
                    rows.append(s)
                    cols.append(c)
                    vals.append(v * scale)
            return s

        wmap: dict[tuple[int, int], int] = {}
        node: dict[tuple[int, int], list[tuple[str, float]]] = {}
        for a, (wa, pa) in enumerate(zip(g1.words, g1.pos, strict=True)):
            for b, (wb, pb) in enumerate(zip(g2.words, g2.pos, strict=True)):
                x = word_pair_features(wa, wb)
                if not (any(x[_COL[k]] for k in _LEXICAL) or x[_COL["edit_sim"]] >= 0.6
                        or x[_COL["trigram_dice"]] >= 0.5):
                    continue
                feats = _wm_feats(wa, pa, a == 0, wb, pb, b == 0, x,
                                  (a in neg1) + (b in neg2), (a in neg1) != (b in neg2))
                wmap[a, b] = var(("wm", a, b), f"{a}:{wa}={b}:{wb}", feats)
                if self.node_info:
                    sim = max(x[_COL[k]] for k in _SIM)
                    node[a, b] = [(f"em|node|{f[3:]}", sim * v) for f, v in feats[2:]]
        del1 = [var(("d1", a), f"{a}:{w}=*", self._del_feats(w, p, a, "1"))
                for a, (w, p) in enumerate(zip(g1.words, g1.pos, strict=True))
                ] if self.text_deletion else []
        del2 = [var(("d2", b), f"*={b}:{w}", self._del_feats(w, p, b, "2"))
                for b, (w, p) in enumerate(zip(g2.words, g2.pos, strict=True))]
        emap = []
        for e, (a1, b1, l1) in enumerate(g1.edges):
            for f, (a2, b2, l2) in enumerate(g2.edges):
                for u, v in ((a2, b2), (b2, a2)):
                    if (a1, u) in wmap and (b1, v) in wmap:
                        feats = [("em", 1.0), (f"em|{l1}|{l2}", 1.0)]
                        if l1 == l2:
                            feats.append(("em|same_label", 1.0))
                        if self.node_info:  # NODE-INFO: both word maps' features x similarity
                            feats += node[a1, u] + node[b1, v]
                        s = var(("em", e, f), f"({a1},{b1}:{l1})=({a2},{b2}:{l2})", feats)
                        emap.append((s, e, f, wmap[a1, u], wmap[b1, v]))
                        break
        edel1, edel2 = [], []
        if self.edge_deletion:
            edel1 = [var(("ed1", e), f"({a},{b}:{lab})=*", [("ed", 1.0), (f"ed|{lab}", 1.0),
                                                            ("ed|1", 1.0)])
                     for e, (a, b, lab) in enumerate(g1.edges)]
            edel2 = [var(("ed2", e), f"*=({a},{b}:{lab})", [("ed", 1.0), (f"ed|{lab}", 1.0),
                                                            ("ed|2", 1.0)])
                     for e, (a, b, lab) in enumerate(g2.edges)]
        base = [("bias", 1.0), ("len_diff", abs(len(g1.words) - len(g2.words)) / 10.0)]
        bc = [(idx(f), v) for f, v in base]
        bc = [(c, v) for c, v in bc if c >= 0]
        meta = {"names": names, "wmap": wmap, "del1": del1, "del2": del2, "emap": emap,
                "edel1": edel1, "edel2": edel2, "n_edges": (len(g1.edges), len(g2.edges)),
                "n_words": (len(g1.words), len(g2.words))}
        return LatentInstance(len(kinds), np.array(rows, np.int64), np.array(cols, np.int64),
                              np.array(vals, np.float64), np.array([c for c, _ in bc], np.int64),
                              np.array([v for _, v in bc], np.float64), meta)

    @staticmethod
    def _del_feats(word: str, pos: str, i: int, side: str) -> list[tuple[str, float]]:
        low = word.lower()
        feats = [("del", 1.0), (f"del|{side}", 1.0), (f"del|pos|{pos}", 1.0),
                 (f"del|{side}|pos|{pos}", 1.0)]
        if low in STOPWORDS:
            feats.append((f"del|{side}|stop", 1.0))
        if is_punct(word):
            feats.append((f"del|{side}|punct", 1.0))
        if normalise_number(word) is not None:
            feats.append((f"del|{side}|number", 1.0))
        if _ne(word, pos, i == 0):
            feats.append((f"del|{side}|ne", 1.0))
        return feats

    def constraints(self, inst: LatentInstance) -> LinearConstraints:
        cached = inst.meta.get("_constraints")
        if cached is not None:
            return cached
        m = inst.meta
        rows = []
        by1: dict[int, dict[int, float]] = {a: {} for a in range(m["n_words"][0])}
        for a, s in enumerate(m["del1"]):
            by1[a][s] = 1.0
        by2: dict[int, dict[int, float]] = {b: {s: 1.0} for b, s in enumerate(m["del2"])}
        for (a, b), s in m["wmap"].items():
            by1[a][s] = 1.0
            by2[b][s] = 1.0
        lo1 = 1.0 if self.text_deletion else -np.inf  # no text deletion: mapped at most once
        rows += [(r, lo1, 1.0) for r in by1.values() if r]  # eqs. (6), (7)
        rows += [(r, 1.0, 1.0) for r in by2.values()]
        n1, n2 = m["n_edges"]
        e1: dict[int, dict[int, float]] = {e: {} for e in range(n1)}
        e2: dict[int, dict[int, float]] = {f: {} for f in range(n2)}
        for e, s in enumerate(m["edel1"]):
            e1[e][s] = 1.0
        for f, s in enumerate(m["edel2"]):
            e2[f][s] = 1.0
        for s, e, f, wa, wb in m["emap"]:
            e1[e][s] = 1.0
            e2[f][s] = 1.0
            rows.append(({wa: 1.0, wb: 1.0, s: -1.0}, -np.inf, 1.0))  # eq. (10)
            rows.append(({wa: 1.0, s: -1.0}, 0.0, np.inf))  # eq. (11)
            rows.append(({wb: 1.0, s: -1.0}, 0.0, np.inf))
        lo = 1.0 if self.edge_deletion else -np.inf  # eqs. (8), (9)
        rows += [(r, lo, 1.0) for r in list(e1.values()) + list(e2.values()) if r]
        cons = LinearConstraints.from_rows(rows, num_variables=inst.num_vars)
        inst.meta["_constraints"] = cons
        return cons

    def solve(self, inst: LatentInstance, scores: np.ndarray) -> np.ndarray:
        return solve_ilp(scores, self.constraints(inst)).h

    def variable_names(self, inst: LatentInstance) -> list[str]:
        return inst.meta["names"]


class EntailmentTask(ParaphraseTask):
    """Text -> hypothesis: word mapping, word deletion and edge mapping (no edge deletion)."""

    name = "entailment"
    edge_deletion = False
    text_deletion = False  # sec. 5.2: word deletion for the hypothesis only (text words are
    # mapped at most once)
    split_sentences = True  # RTE texts are paragraphs: parsed sentence by sentence
