"""Building a `PhrasalAligner` from a trained word aligner (Bansal et al. 2011, secs. 5, 7.1).

1. Viterbi alignments of both word-HMM directions over the whole bitext;
2. phrase lists per language (`mining.py`): contiguous observation spans aligned to one state
   and gappy pairs (see `_mine_kernel.mine_candidates`), ranked by (aligned - discount) /
   occurrences, top N contiguous + top N gappy;
3. the phrase-key table: every co-occurring (phrase state, observation word) pair of both
   directions;
4. initial emissions: word pairs from the word HMM; phrasal ones from the 1-k / k-1 tight
   phrase pairs of the grow-diag-final Viterbi links; gappy source states from reversed
   backward links (and gappy target states from reversed forward links). A phrase state
   with counts blends them 1:1 with the mean of its words' word-HMM rows; one without counts
   uses that mean. The word HMM's jump weights are kept (fixed).
Cost: two Viterbi passes and three matching passes over the bitext (O(cells) each).
"""

from __future__ import annotations

import gc
from contextlib import nullcontext
from dataclasses import replace

import torch

from aligners.data.bitext import PairIndex
from aligners.data.heap import release_free_heap
from aligners.models.gappy_hsmm._init_kernel import tight_phrase_keys
from aligners.models.gappy_hsmm.config import PhrasalConfig
from aligners.models.gappy_hsmm.layout import make_layout
from aligners.models.gappy_hsmm.mining import mine_phrase_lists, word_viterbi
from aligners.models.gappy_hsmm.model import PhrasalAligner
from aligners.models.gappy_hsmm.phrase_lists import PhraseList
from aligners.models.gappy_hsmm.prepared import ReuseCache
from aligners.models.gappy_hsmm.routing import phrase_rows

__all__ = ["word_viterbi", "mine_phrase_lists", "phrase_keys", "build_phrasal_aligner",
           "phrasal_stages"]

_TINY = 1e-20


def _unique(parts):
    return torch.unique(torch.cat(parts)) if parts else torch.zeros(0, dtype=torch.long)


def phrase_keys(index: PairIndex, src_list: PhraseList, tgt_list: PhraseList, *,
                gappy: bool, spans: list,
                layouts: ReuseCache | None = None) -> tuple[torch.Tensor, float]:
    """(sorted phrase keys (Q,), mean number of phrase states matched per pair). `spans`: a
    list that receives per batch (phrase rows (R,), their span_src, span_tgt) for
    `_init_counts` (no second matching pass); `layouts`: a `ReuseCache` offered per batch
    its `Layout.compact()` (for the first EM iteration: no second matching pass)."""
    Ut = tgt_list.n_units
    merged, parts, matched = torch.zeros(0, dtype=torch.long), [], 0
    for k in range(len(index)):
        bt = index.batch(k)
        lay = make_layout(bt, src_list, tgt_list, gappy=gappy)
        matched += lay.n_matched()
        if layouts is not None:
            layouts.put(k, lay.compact())
        rows = phrase_rows(lay).nonzero()[:, 0]
        spans.append((rows, lay.span_src[rows], lay.span_tgt[rows]))
        for ph, words, ln, fwd in ((lay.ph_fwd, bt.tgt, bt.tgt_lengths, True),
                                   (lay.ph_bwd, bt.src, bt.src_lengths, False)):
            unit, w = ph[2][:, :, None], words.long()[:, None, :]
            ok = (unit >= 0) & (torch.arange(words.shape[1])[None, None, :] < ln[:, None, None])
            parts.append(torch.unique((unit * Ut + w if fwd else w * Ut + unit)[ok]))
        if len(parts) > 64:
            merged, parts = _unique([merged, *parts]), []
    return _unique([merged, *parts]), matched / max(1, index.n_sentences)


def _init_counts(model: PhrasalAligner, index: PairIndex, vit: list, spans: list,
                 gappy_where: list | None) -> torch.Tensor:
    """(Q,) counts of the tight 1-k / k-1 grow-diag-final pairs and reversed gappy links.
    `spans`: per batch (phrase rows, span_src, span_tgt) from `phrase_keys`; `gappy_where`:
    per batch the gappy instances of `mine_phrase_lists` (a gappy model)."""
    Ut, P = model.n_tgt_units, model.word_keys.numel()
    keys = []
    for k in range(len(index)):
        bt = index.batch(k)
        rows, ss, st = spans[k]
        f, b = vit[k]
        src, tgt = bt.src.long(), bt.tgt.long()
        # a pair adds keys only through its listed spans: rows without a phrase state add
        # none; the others go through the numba grow-diag-final + tight-pair kernel
        if rows.numel():
            keys.append(torch.from_numpy(tight_phrase_keys(
                f[rows], b[rows], bt.src_lengths[rows], bt.tgt_lengths[rows], ss, st,
                src[rows], tgt[rows], Ut)))
        if model.config.gappy:
            for obs, lst, fwd in ((bt.src, model.src_list, True), (bt.tgt, model.tgt_list, False)):
                rb, ra, rc, state = gappy_where[k]["src" if fwd else "tgt"].unbind(1)
                unit = lst.gappy_units(obs, rb, ra, rc)
                ok = unit >= 0
                other = (tgt if fwd else src)[rb[ok], state[ok]]
                key = unit[ok] * Ut + other if fwd else other * Ut + unit[ok]
                keys.append(key.long())
    counts = torch.zeros(model.phrase_keys.numel(), dtype=torch.float32)
    if keys:
        kt = torch.cat(keys)
        pos = model.phrase_ids(kt // Ut, kt % Ut) - P - 1
        pos = pos[pos >= 0]
        counts.index_add_(0, pos, torch.ones(pos.numel()))
    return counts


def _members(lst: PhraseList) -> torch.Tensor:
    """(n_units - V, L) member words of each phrase unit (-1 pad; gappy: its two ends)."""
    g = torch.full((lst.n_gappy, lst.max_len), -1, dtype=torch.long)
    g[:, :2] = lst.gappy
    return torch.cat([lst.contiguous, g])


def _word_lookup(word_model, s, t, *, forward: bool):
    """Word-HMM probabilities p(t|s) (forward) or p(s|t) for word id tensors (same shape)."""
    keys = word_model.keys
    q = s * word_model.n_tgt_words + t
    pos = torch.searchsorted(keys, q.reshape(-1)).clamp(max=max(0, keys.numel() - 1))
    hit = (keys[pos] == q.reshape(-1)) & (s.reshape(-1) >= 0) & (t.reshape(-1) >= 0)
    tab = word_model.t_fwd if forward else word_model.t_bwd
    return torch.where(hit, tab[pos], torch.zeros(())).view(q.shape)


def _init_table(model, word_model, counts, n_occ, *, forward: bool) -> torch.Tensor:
    """Initial (P+1+Q,) table of one direction; see the module docstring."""
    P, Ut, pk = model.word_keys.numel(), model.n_tgt_units, model.phrase_keys
    lst = model.src_list if forward else model.tgt_list
    V, n_given = lst.n_words, lst.n_units
    g = model.givens(forward=forward)
    gp, op = g[P + 1:], pk % Ut if forward else pk // Ut  # phrase slots' given, outcome units
    word_given, occ = gp < V, n_occ.clamp_min(1)
    # word givens: their phrase outcomes by counts / occurrences, words scaled down
    mass = torch.zeros(n_given).index_add_(0, gp[word_given], counts[word_given])
    share = (mass[:V] / occ).clamp(max=0.5)
    wt = (word_model.t_fwd if forward else word_model.t_bwd)[:P]
    ph = torch.zeros(pk.numel())
    ph[word_given] = counts[word_given] / occ[gp[word_given]].float()
    # phrase givens: counts blended with the mean of the member words' rows
    gi = gp[~word_given]
    rows = _members(lst)[gi - V]  # (n, L)
    o = op[~word_given][:, None].expand_as(rows)
    vals = _word_lookup(word_model, *((rows, o) if forward else (o, rows)), forward=forward)
    fb = (vals * (rows >= 0)).sum(1) / (rows >= 0).sum(1).clamp_min(1)
    c = counts[~word_given]
    c_tot = torch.zeros(n_given).index_add_(0, gi, c)[gi]
    fbn = fb / torch.zeros(n_given).index_add_(0, gi, fb)[gi].clamp_min(_TINY)
    cn = c / c_tot.clamp_min(_TINY)
    ph[~word_given] = torch.where(c_tot > 0, 0.5 * cn + 0.5 * fbn, fbn)
    table = torch.cat([wt * (1 - share[g[:P]]), torch.full((1,), _TINY), ph]).float()
    return table.clamp_min(_TINY)


def build_phrasal_aligner(word_model, index: PairIndex, config: PhrasalConfig, *,
                          vit: list | None = None, layouts: ReuseCache | None = None):
    """(PhrasalAligner initialised from `word_model`, stats dict). Runs on CPU tensors.
    `vit`: `word_viterbi(word_model, index)` computed earlier (e.g. shared by the
    contiguous and the gappy model of one word model); computed here when None.
    `layouts`: a `ReuseCache` offered each batch's `CompactLayout` (matched here anyway),
    to hand to `fit_phrasal(layouts=)` / the training task's first iteration."""
    if vit is None:
        vit = word_viterbi(word_model, index)
    where = [] if config.gappy else None  # gappy instances, mined once
    src_list, tgt_list, stats = mine_phrase_lists(index, vit, config, gappy_where=where)
    spans = []  # phrase rows' span tables, matched once for keys and initial counts
    pk, mean_matched = phrase_keys(index, src_list, tgt_list, gappy=config.gappy, spans=spans,
                                   layouts=layouts)
    model = PhrasalAligner(word_keys=word_model.keys, phrase_keys=pk,
                           n_src_words=index.n_src_words, n_tgt_words=index.n_tgt_words,
                           src_list=src_list, tgt_list=tgt_list, jump_fwd=word_model.jump_fwd,
                           jump_bwd=word_model.jump_bwd, config=config)
    counts = _init_counts(model, index, vit, spans, where)
    del spans, where
    n_src = torch.zeros(index.n_src_words, dtype=torch.long)
    n_tgt = torch.zeros(index.n_tgt_words, dtype=torch.long)
    for k in range(len(index)):
        bt = index.batch(k)
        for n, w, ln in ((n_src, bt.src, bt.src_lengths), (n_tgt, bt.tgt, bt.tgt_lengths)):
            ok = torch.arange(w.shape[1])[None, :] < ln[:, None]
            n += torch.bincount(w[ok].long(), minlength=n.numel())
    model.t_fwd = _init_table(model, word_model, counts, n_src, forward=True)
    model.t_bwd = _init_table(model, word_model, counts, n_tgt, forward=False)
    model.null_tgt = word_model.null_tgt.clone().float()
    model.null_src = word_model.null_src.clone().float()
    model.reset_counts()
    stats.update(src_contiguous=src_list.n_contiguous, src_gappy=src_list.n_gappy,
                 tgt_contiguous=tgt_list.n_contiguous, tgt_gappy=tgt_list.n_gappy,
                 phrase_keys=int(pk.numel()), mean_phrases_matched=mean_matched,
                 init_phrase_pairs=float(counts.sum()))
    return model, stats


def phrasal_stages(index: PairIndex, config, fit_word, *, kinds: tuple | None = None,
                   timed=lambda name: nullcontext()):
    """The regimen (sec. 7.1) of `aligners align` and of the task: the start (a word HMM
    of `config.start`, sized by `for_pairs`, trained by `fit_word(word)`) and its Viterbi
    links, then per name of `kinds` ("contiguous", "gappy"; default: the one of
    `config.phrasal.gappy`) yields (name, phrasal model built from them, build stats, its
    batch layouts for the first EM iteration) for the caller to train; the start is freed
    after the last build. `timed(name)` (a context manager) times each step."""
    from aligners.models.hmm.agreement import WordAligner

    kinds = kinds or ("gappy" if config.phrasal.gappy else "contiguous",)
    with timed("word_hmm_no_agreement"):
        word = WordAligner.from_index(index, config.start)
        fit_word(word)
    with timed("word_viterbi"):
        vit = word_viterbi(word, index)
    for name in kinds:
        with timed(name):
            layouts = ReuseCache()  # batch layouts matched by the build: reused by iteration 1
            model, stats = build_phrasal_aligner(
                word, index, replace(config.phrasal, gappy=name == "gappy"), vit=vit,
                layouts=layouts)
            if name == kinds[-1]:  # the start model and its Viterbi links: not needed after
                word = vit = None
                gc.collect()
                release_free_heap()
        yield name, model, stats, layouts
        model = layouts = None
