"""Token-pair and phrase-pair features for monolingual alignment (Yao et al. 2013, 3.3-3.4).

`featurize_states(src, tgt, max_src_len=Ls, max_tgt_len=Lt)` -> the features of every block:
source segment [s, s+ls) against the target phrase of length lt ENDING at e (F columns,
`feature_names`), in the phrasal aligner's state order, and the NULL features (I, F0). The
token model uses the Ls = Lt = 1 blocks. A block's value is (sum of the source tokens' best
matches + sum of the target tokens' best matches) / 2 (paper 3.4), plus a weakest-link
column and block-shape indicators. Cost: I*J memoised word-pair look-ups + O(Ls*Lt*I*J*F).
"""

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch

from aligners.features.string_sim import (
    STOPWORDS,
    TOKEN_PAIR_FEATURES,
    is_punct,
    word_pair_features,
)
from aligners.features.wordnet import get_wordnet

__all__ = ["featurize_states", "feature_names", "NULL_FEATURES", "TOKEN_FEATURES"]

TOKEN_FEATURES = (
    *TOKEN_PAIR_FEATURES, "ctx_left_identical", "ctx_right_identical", "ctx_left_dice",
    "ctx_right_dice", "rel_position",
)
NULL_FEATURES = ("null_bias", "null_stopword", "null_punct", "null_has_identical",
                 "null_best_dice", "null_best_wordnet")
EMBED = "embedding_cosine"

Embedder = Callable[[Sequence[str], Sequence[str]], torch.Tensor]  # -> (I, J) cosine


CUES = ("cue_punct", "cue_stop_end", "cue_stop_start", "cue_capitalised", "cue_same_order")


def feature_names(*, max_src_len: int, max_tgt_len: int, embedding: bool = False,
                  phrase_cues: bool = False) -> list[str]:
    """Names of the F feature columns of a block (`phrase_cues` appends CUES)."""
    tok = list(TOKEN_FEATURES) + ([EMBED] if embedding else [])
    shapes = [f"shape_{a}x{b}" for a in range(1, max_src_len + 1)
              for b in range(1, max_tgt_len + 1) if (a, b) != (1, 1)]
    return ([f"sum_{n}" for n in tok] + [f"min_{n}" for n in tok] + shapes
            + ["phrase_lower_identical", "phrase_wn_synonym"] + (list(CUES) if phrase_cues else []))


def _token_matrix(src, tgt, embedder: Embedder | None) -> torch.Tensor:
    """(I, J, Ft) token-pair features incl. context and relative position."""
    I, J = len(src), len(tgt)
    # one look-up per distinct (source word, target word) pair (memoised across pairs too),
    # converted through numpy (the same float32 rounding, several times faster than
    # torch.tensor on a list of tuples), then expanded to the sentence positions
    us, ut = ({w: n for n, w in enumerate(dict.fromkeys(x))} for x in (src, tgt))  # word -> row
    rows = [word_pair_features(a, b) for a in us for b in ut]
    nf = len(TOKEN_PAIR_FEATURES)
    table = torch.from_numpy(np.asarray(rows, dtype=np.float32).reshape(len(us), len(ut), nf))
    if len(us) < I or len(ut) < J:
        table = table[[us[w] for w in src]][:, [ut[w] for w in tgt]]
    low = table[..., TOKEN_PAIR_FEATURES.index("lower_identical")]
    dice = table[..., TOKEN_PAIR_FEATURES.index("trigram_dice")]
    ctx = torch.zeros(I, J, 4)  # the left and right neighbours' identity, then dice
    for k, m in enumerate((low, dice)):
        ctx[1:, 1:, 2 * k], ctx[:-1, :-1, 2 * k + 1] = m[:-1, :-1], m[1:, 1:]
    ri = (torch.arange(I, dtype=torch.float32) + 0.5) / I
    rj = (torch.arange(J, dtype=torch.float32) + 0.5) / J
    pos = (1 - (ri[:, None] - rj[None, :]).abs()).unsqueeze(-1)
    cols = [table, ctx, pos]
    if embedder is not None:
        cols.append(embedder(src, tgt).clamp(min=0).unsqueeze(-1).float())
    return torch.cat(cols, dim=-1)


def _phrase_strings(words, max_len: int) -> list[list[str]]:
    """[l-1] -> the lower-cased `_`-joined phrases of length l at each start (l = 1..max_len)."""
    low = [w.lower() for w in words]
    return [["_".join(low[s: s + n]) for s in range(len(low) - n + 1)]
            for n in range(1, max_len + 1)]


def _phrase_columns(sp, tp, X) -> torch.Tensor:
    """(len(sp), len(tp), 2): joined-phrase lower-case identity and WordNet (multi-word)
    synonymy of the source phrases `sp` x target phrases `tp` (from `_phrase_strings`)."""
    out = torch.zeros(len(sp), len(tp), 2)
    ids = {x: k for k, x in enumerate(dict.fromkeys([*sp, *tp]))}  # phrase -> a number
    src_ids, tgt_ids = (torch.tensor([ids[x] for x in p], dtype=torch.long) for p in (sp, tp))
    out[..., 0] = (src_ids[:, None] == tgt_ids[None, :]).float()
    if X is not None:  # ls = lt = 1: the token-level WordNet synonym column
        out[..., 1] = X[..., TOKEN_PAIR_FEATURES.index("wn_synonym")]
        return out
    wn = get_wordnet()  # (without the database no phrase has synsets)
    t_in = [t for t, x in enumerate(tp) if wn.synsets(x)]
    for s in (s for s, x in enumerate(sp) if wn.synsets(x)):
        for t in t_in:
            if sp[s] != tp[t] and wn.relations(sp[s], tp[t])[0]:
                out[s, t, 1] = 1.0
    return out


def _cue_columns(src, tgt, ls, lt, X) -> torch.Tensor:
    """(I-ls+1, J-lt+1, 5) chunk-boundary proxies of a multi-token block (no chunker offline):
    contains punctuation, ends / starts with a function word on both sides, all capitalised,
    same words in the same order."""
    def flags(words):
        return (torch.tensor([float(is_punct(w)) for w in words]),
                torch.tensor([float(w.lower() in STOPWORDS) for w in words]),
                torch.tensor([float(w[:1].isupper()) for w in words]))
    (ps, ss, cs), (pt, st, ct) = flags(src), flags(tgt)
    I, J = len(src), len(tgt)
    n_s, n_t = I - ls + 1, J - lt + 1
    out = torch.zeros(n_s, n_t, 5)
    out[..., 0] = torch.maximum(ps.unfold(0, ls, 1).amax(-1)[:, None],
                                pt.unfold(0, lt, 1).amax(-1)[None, :])
    out[..., 1] = torch.maximum(ss[ls - 1:][:, None], st[lt - 1:][None, :])
    out[..., 2] = ss[:n_s][:, None] * st[:n_t][None, :]
    out[..., 3] = cs.unfold(0, ls, 1).amin(-1)[:, None] * ct.unfold(0, lt, 1).amin(-1)[None, :]
    if ls == lt:
        low = X[..., TOKEN_PAIR_FEATURES.index("lower_identical")]
        out[..., 4] = math.prod(low[d: d + n_s, d: d + n_t] for d in range(ls))
    return out


def featurize_states(
    src: Sequence[str], tgt: Sequence[str], *, max_src_len: int = 3, max_tgt_len: int = 3,
    embedder: Embedder | None = None, phrase_cues: bool = False,
    dtype: torch.dtype = torch.float16,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The block features in the phrasal aligner's state order (`_mono_states`: NULL, the J
    one-token phrases, then by end position lengths 2..Lt) in `dtype`:
    (emit (I, Ls, C, F) with C = 1 + J*Lt and a zero NULL column, null (I, F0) float32).
    Cost: see the module docstring; memory I*Ls*C*F in `dtype`."""
    I, J, Ls, Lt = len(src), len(tgt), max_src_len, max_tgt_len
    X = _token_matrix(src, tgt, embedder)
    Ft = X.shape[-1]
    # end of the phrase-string columns (the CUES follow)
    P = len(feature_names(max_src_len=Ls, max_tgt_len=Lt, embedding=embedder is not None))
    emit = torch.zeros(I, Ls, 1 + J * Lt, P + len(CUES) * phrase_cues, dtype=dtype)
    src_phrases, tgt_phrases = _phrase_strings(src, Ls), _phrase_strings(tgt, Lt)
    # best target match per source token (per lt) / best source match per target token (per ls)
    tmaxs = {lt: X.unfold(1, lt, 1).amax(-1) for lt in range(1, min(Lt, J) + 1)}
    smaxs = {ls: X.unfold(0, ls, 1).amax(-1) for ls in range(1, min(Ls, I) + 1)}
    for ls in range(1, min(Ls, I) + 1):
        smax = smaxs[ls]
        for lt in range(1, min(Lt, J) + 1):
            tmax = tmaxs[lt]
            A = (tmax.unfold(0, ls, 1).sum(-1) + smax.unfold(1, lt, 1).sum(-1)) / 2
            Bm = torch.minimum(tmax.unfold(0, ls, 1).amin(-1),
                               smax.unfold(1, lt, 1).amin(-1)) * max(ls, lt)
            # the (I-ls+1, J-lt+1, F) view of the blocks: source start x target end
            blk = emit[: I - ls + 1, ls - 1, 1: J + 1] if lt == 1 else emit[
                : I - ls + 1, ls - 1, J + 1:].unflatten(1, (J, Lt - 1))[:, lt - 1:, lt - 2]
            blk[..., :Ft] = A
            blk[..., Ft: 2 * Ft] = Bm
            if (ls, lt) != (1, 1):
                blk[..., 2 * Ft + (ls - 1) * Lt + lt - 2] = 1.0
            blk[..., P - 2: P] = _phrase_columns(
                src_phrases[ls - 1], tgt_phrases[lt - 1], X if (ls, lt) == (1, 1) else None,
            ) * max(ls, lt)
            if phrase_cues and (ls, lt) != (1, 1):
                blk[..., P:] = _cue_columns(src, tgt, ls, lt, X)
    best = X.amax(1) if J else X.new_zeros(I, X.shape[-1])  # each source token's best match
    wn = [TOKEN_PAIR_FEATURES.index(f"wn_{r}") for r in ("synonym", "hypernym", "hyponym",
                                                          "derivation")]
    return emit, torch.stack([
        torch.ones(I),
        torch.tensor([float(w.lower() in STOPWORDS) for w in src]),
        torch.tensor([float(is_punct(w)) for w in src]),
        best[:, TOKEN_PAIR_FEATURES.index("lower_identical")],
        best[:, TOKEN_PAIR_FEATURES.index("trigram_dice")],
        best[:, wn].amax(-1),
    ], dim=-1)
