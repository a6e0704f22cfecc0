"""Building a `PhrasalAligner` from a trained word aligner (Bansal et al. 2011, secs. 5, 7.1).

1. Viterbi alignments of both word-HMM directions over the whole bitext;
2. phrase lists per language: contiguous observation spans aligned to one state and gappy
   pairs (see `phrase_lists.mine_candidates`), ranked by (aligned - discount) / occurrences,
   top N contiguous + top N gappy;
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

import numpy as np
import torch

from aligners.data.bitext import PairIndex
from aligners.models.gappy_hsmm._init_kernel import (
    gappy_occurrences,
    hash_table,
    key_occurrences,
    tight_phrase_keys,
)
from aligners.models.gappy_hsmm._mine_kernel import mine_candidates_cpu
from aligners.models.gappy_hsmm.mining_viterbi import word_viterbi
from aligners.models.gappy_hsmm.model import PhrasalAligner, PhrasalConfig, make_layout
from aligners.models.gappy_hsmm.phrase_lists import (
    PhraseList,
    mine_candidates,
    rank_phrases,
    span_hashes,
)
from aligners.models.gappy_hsmm.prepared import ReuseCache
from aligners.models.gappy_hsmm.routing import phrase_rows

__all__ = ["word_viterbi", "mine_phrase_lists", "phrase_keys", "build_phrasal_aligner"]

_TINY = 1e-20


def _to_list(rows: list, width: int) -> torch.Tensor:
    t = torch.full((len(rows), width), -1, dtype=torch.long)
    for r, ph in enumerate(rows):
        t[r, :len(ph)] = torch.tensor(ph)
    return t


def _unique_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`torch.unique(x, dim=0, return_counts=True)` of non-negative rows x (M, n): each row
    packed into one int64 key (base max + 1, first word most significant, so the key order
    is the lexicographic row order), unique keys counted and unpacked. The same rows in
    the same order and counts, faster than unique_dim; falls back to it when a key could
    overflow (base^n >= 2^63)."""
    M, n = x.shape
    base = int(x.max()) + 1 if x.numel() else 1
    if M == 0 or int(x.min()) < 0 or base ** n >= 2 ** 63:
        return torch.unique(x, dim=0, return_counts=True)
    k = torch.zeros(M, dtype=torch.long)
    for c in range(n):
        k = k * base + x[:, c]
    u, counts = torch.unique(k, return_counts=True)
    rows = torch.empty(u.numel(), n, dtype=x.dtype)
    for c in range(n - 1, -1, -1):
        rows[:, c] = u % base
        u = u // base
    return rows, counts


def _count_rows(parts: dict, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """{length: [(M, length) word-id tensors]} -> (distinct phrases (N, width) -1 padded,
    their counts (N,) int64). One torch.unique per length (no per-instance Python)."""
    rows, counts = [], []
    for ln, ps in sorted(parts.items()):
        if not ps:
            continue
        u, c = _unique_rows(torch.cat(ps))
        rows.append(torch.cat([u, u.new_full((u.shape[0], width - ln), -1)], 1))
        counts.append(c)
    t = torch.cat(rows) if rows else torch.zeros(0, width, dtype=torch.long)
    return t, torch.cat(counts) if counts else torch.zeros(0, dtype=torch.long)


def _rankable(rows: torch.Tensor, aligned, total, *, min_count: int,
              discount: float) -> tuple[dict, dict]:
    """({phrase tuple: aligned}, {phrase tuple: total}) of the candidates `rank_phrases`
    can rank (total >= 1 and >= min_count, aligned - discount > 0), from rows (N, W) (-1
    padded) and the counts (N,) of all candidates: the same ranking as passing every
    candidate, without a Python tuple per candidate."""
    a = np.asarray(aligned, dtype=np.int64)
    t = np.asarray(total, dtype=np.int64)
    keep = np.nonzero((t > 0) & (t >= min_count) & (a - discount > 0))[0]
    sub = rows[torch.from_numpy(keep)].tolist()
    phs = [tuple(w for w in r if w >= 0) for r in sub]
    return dict(zip(phs, a[keep].tolist())), dict(zip(phs, t[keep].tolist()))


def _gappy_totals(words: torch.Tensor, lengths: torch.Tensor, keys: torch.Tensor,
                  V: int) -> torch.Tensor:
    """(G,) occurrences in one batch (words (B,N), lengths (B,)) of the gappy candidates with
    sorted keys w1 * V + w2 (G,): pairs a < c - 1 of one sentence. The counts of
    `PhraseList.match_gappy` without its (B,N,N) unit table. O(B N^2 log G). The reference
    of `_GappyCounter` (tests)."""
    w = words.long()
    N = w.shape[1]
    ar = torch.arange(N, device=w.device)
    live = ar[None, :] < lengths[:, None]
    a_ok = torch.isin(w, torch.unique(keys // V)) & live
    c_ok = torch.isin(w, torch.unique(keys % V)) & live
    b, a, c = (a_ok[:, :, None] & c_ok[:, None, :] & (ar[:, None] + 1 < ar[None, :])).nonzero(
        as_tuple=True)
    q = w[b, a] * V + w[b, c]
    pos = torch.searchsorted(keys, q).clamp(max=keys.numel() - 1)
    return torch.bincount(pos[keys[pos] == q], minlength=keys.numel())


class _GappyCounter:
    """Occurrences of the gappy candidates (sorted keys (G,), w1 * V + w2) summed over
    batches: `add(words, lengths)` per batch, `counts` (G,) int64. Same counts as summing
    `_gappy_totals` (integers), by the numba kernel `_init_kernel.gappy_occurrences`
    without (B,N,N) temporaries: a hash table of the keys, first / last word filters."""

    def __init__(self, keys: torch.Tensor, V: int):
        k = np.ascontiguousarray(keys.numpy(), dtype=np.int64)
        self.keys, self.V = k, int(V)
        self.table = hash_table(k) if k.shape[0] else None
        self.first_ok = np.zeros(V, dtype=np.bool_)
        self.last_ok = np.zeros(V, dtype=np.bool_)
        self.first_ok[k // V] = True
        self.last_ok[k % V] = True
        self.counts = np.zeros(k.shape[0], dtype=np.int64)

    def add(self, words: torch.Tensor, lengths: torch.Tensor) -> None:
        if self.keys.shape[0]:
            gappy_occurrences(words, lengths, self.keys, self.table, self.first_ok,
                              self.last_ok, self.V, self.counts)


class _SpanCounter:
    """Occurrences of the contiguous candidates (rows (G, L) word ids, -1 padded, lengths
    >= 2) summed over batches: `add(words, lengths)` per batch, `counts` (G,) int64. Spans
    are identified by `phrase_lists.span_hashes` as in `PhraseList.match_spans` (whose
    bincount per batch it equals), looked up in a hash table (`_init_kernel`) instead of a
    binary search over the sorted candidate hashes."""

    def __init__(self, rows: torch.Tensor, max_len: int):
        lens = (rows >= 0).sum(1)
        self.max_len = max_len
        keys = torch.zeros(rows.shape[0], dtype=torch.long)
        self.lengths = []
        for ln in range(2, max_len + 1):
            sel = (lens == ln).nonzero()[:, 0]
            if sel.numel():
                keys[sel] = span_hashes(rows[sel, :ln], torch.full((sel.numel(),), ln),
                                        length=ln)[0][:, 0]
                self.lengths.append(ln)
        self.keys = np.ascontiguousarray(keys.numpy())
        self.table = hash_table(self.keys) if self.keys.shape[0] else None
        self.counts = np.zeros(self.keys.shape[0], dtype=np.int64)

    def add(self, words: torch.Tensor, lengths: torch.Tensor) -> None:
        for ln in self.lengths:
            h, valid = span_hashes(words, lengths, length=ln)
            if h.numel():
                key_occurrences(h, valid, self.keys, self.table, self.counts)


def mine_phrase_lists(index: PairIndex, vit: list, config: PhrasalConfig, *,
                      gappy_where: list | None = None):
    """(source PhraseList, target PhraseList, stats dict) from the Viterbi alignments.
    `gappy_where`: a list that receives per batch {"src": where, "tgt": where}, the gappy
    instances of `mine_candidates` (for `_init_counts`: no second mining pass)."""
    L = config.max_phrase_len
    V = {"src": index.n_src_words, "tgt": index.n_tgt_words}
    spans = {s: {ln: [] for ln in range(2, L + 1)} for s in ("src", "tgt")}
    gkeys = {s: [] for s in ("src", "tgt")}
    for k in range(len(index)):
        bt = index.batch(k)
        f, b = vit[k]
        where_k = {}
        for side, obs, al, ln in (("tgt", bt.tgt, f, bt.tgt_lengths),
                                  ("src", bt.src, b, bt.src_lengths)):
            mine = mine_candidates_cpu if obs.device.type == "cpu" else mine_candidates
            contig, (gk, where_k[side]) = mine(obs, al.long(), ln, max_len=L, n_words=V[side])
            for length, words in contig.items():
                spans[side][length].append(words)
            gkeys[side].append(gk)
        if gappy_where is not None:
            gappy_where.append(where_k)
    lists, stats = {}, {}
    for side in ("src", "tgt"):
        rows, counts = _count_rows(spans[side], L)
        spans[side] = None
        gu, gc = (torch.unique(torch.cat(gkeys[side]), return_counts=True) if gkeys[side]
                  else (torch.zeros(0, dtype=torch.long),) * 2)
        cand = PhraseList(rows, torch.stack([gu // V[side], gu % V[side]], 1), V[side], L)
        tot_c = _SpanCounter(rows, L)
        tot_g = _GappyCounter(gu, V[side])
        for k in range(len(index)):
            bt = index.batch(k)
            words, ln = (bt.src, bt.src_lengths) if side == "src" else (bt.tgt, bt.tgt_lengths)
            tot_c.add(words, ln)
            if config.gappy and cand.n_gappy:
                tot_g.add(words, ln)
        aligned, total = _rankable(rows, counts.numpy(), tot_c.counts,
                                   min_count=config.min_count, discount=config.discount)
        top_c = rank_phrases(aligned, total, top=config.n_contiguous,
                             discount=config.discount, min_count=config.min_count,
                             rule=config.rank)
        top_g = []
        if config.gappy:
            gd = config.discount if config.gappy_discount is None else config.gappy_discount
            galigned, gtotal = _rankable(cand.gappy, gc.numpy(), tot_g.counts,
                                         min_count=config.gappy_min_count, discount=gd)
            top_g = rank_phrases(galigned, gtotal, top=config.n_gappy, discount=gd,
                                 min_count=config.gappy_min_count,
                                 rule=config.gappy_rank or config.rank)
        lists[side] = PhraseList(_to_list(top_c, L),
                                 torch.tensor(top_g, dtype=torch.long).view(-1, 2), V[side], L)
        stats[f"{side}_contiguous_candidates"] = cand.n_contiguous
        stats[f"{side}_gappy_candidates"] = cand.n_gappy
    return lists["src"], lists["tgt"], stats


def _unique(parts):
    return torch.unique(torch.cat(parts)) if parts else torch.zeros(0, dtype=torch.long)


def phrase_keys(index: PairIndex, src_list: PhraseList, tgt_list: PhraseList, *,
                gappy: bool, spans: list | None = None,
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
        if spans is not None:
            rows = phrase_rows(lay).nonzero()[:, 0]
            spans.append((rows, lay.span_src[rows], lay.span_tgt[rows]))
        for ph, words, ln, fwd in ((lay.ph_fwd, bt.tgt, bt.tgt_lengths, True),
                                   (lay.ph_bwd, bt.src, bt.src_lengths, False)):
            unit = ph[2]
            ok = (unit[:, :, None] >= 0) & (torch.arange(words.shape[1])[None, None, :]
                                            < ln[:, None, None])
            w = words.long()[:, None, :]
            key = unit[:, :, None] * Ut + w if fwd else w * Ut + unit[:, :, None]
            parts.append(torch.unique(key[ok]))
        if len(parts) > 64:
            merged, parts = _unique([merged, *parts]), []
    return _unique([merged, *parts]), matched / max(1, index.n_sentences)


def _gappy_units(lst: PhraseList, words: torch.Tensor, rb, ra, rc) -> torch.Tensor:
    """Unit of the listed gappy phrase words[rb, ra] ? words[rb, rc] (or -1) per instance:
    `lst.match_gappy(words, ...)[rb, ra, rc]` without its (B,N,N) table. O(M log Pg)."""
    _, gk, order = lst._tables(words.device)
    if gk.numel() == 0 or rb.numel() == 0:
        return torch.full_like(rb, -1)
    w = words.long()
    keys = w[rb, ra] * lst.n_words + w[rb, rc]
    pos = torch.searchsorted(gk, keys).clamp(max=gk.numel() - 1)
    return torch.where(gk[pos] == keys, order[pos] + lst.n_words + lst.n_contiguous,
                       torch.full_like(pos, -1))


def _init_counts(model: PhrasalAligner, index: PairIndex, vit: list,
                 spans: list | None = None, gappy_where: list | None = None) -> torch.Tensor:
    """(Q,) counts of the tight 1-k / k-1 grow-diag-final pairs and reversed gappy links.
    `spans`: per batch (phrase rows, span_src, span_tgt) from `phrase_keys` (else matched
    here); `gappy_where`: per batch the gappy instances of `mine_phrase_lists` (else mined
    here)."""
    Ut, P = model.n_tgt_units, model.word_keys.numel()
    keys = []
    for k in range(len(index)):
        bt = index.batch(k)
        if spans is None:
            lay = make_layout(bt, model.src_list, model.tgt_list, gappy=model.config.gappy)
            rows = phrase_rows(lay).nonzero()[:, 0]
            ss, st = lay.span_src[rows], lay.span_tgt[rows]
        else:
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
            for obs, al, ln, lst, fwd in ((bt.src, b, bt.src_lengths, model.src_list, True),
                                          (bt.tgt, f, bt.tgt_lengths, model.tgt_list, False)):
                if gappy_where is None:
                    _, (_, where) = mine_candidates(obs, al.long(), ln, max_len=1,
                                                    n_words=lst.n_words)
                else:
                    where = gappy_where[k]["src" if fwd else "tgt"]
                rb, ra, rc, state = where.unbind(1)
                unit = _gappy_units(lst, obs, rb, ra, rc)
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
    P = model.word_keys.numel()
    Vs, Vt, Ut = model.n_src_words, model.n_tgt_words, model.n_tgt_units
    g = model.givens(forward=forward)
    V = Vs if forward else Vt
    n_given = model.src_list.n_units if forward else model.tgt_list.n_units
    pk = model.phrase_keys
    gp, op = (pk // Ut, pk % Ut) if forward else (pk % Ut, pk // Ut)  # given, outcome units
    word_given = gp < V
    # word givens: their phrase outcomes by counts / occurrences, words scaled down
    mass = torch.zeros(n_given).index_add_(0, gp[word_given], counts[word_given])
    share = (mass[:V] / n_occ.clamp_min(1)).clamp(max=0.5)
    table = torch.empty(P + 1 + pk.numel())
    wt = (word_model.t_fwd if forward else word_model.t_bwd)[:P]
    table[:P] = wt * (1 - share[g[:P]])
    table[P] = _TINY
    ph = torch.zeros(pk.numel())
    ph[word_given] = counts[word_given] / n_occ.clamp_min(1)[gp[word_given]].float()
    # phrase givens: counts blended with the mean of the member words' rows
    mem = _members(model.src_list if forward else model.tgt_list)
    rows = mem[(gp[~word_given] - V)]  # (n, L)
    o = op[~word_given][:, None].expand_as(rows)
    vals = _word_lookup(word_model, rows, o, forward=True) if forward else _word_lookup(
        word_model, o, rows, forward=False)
    fb = (vals * (rows >= 0)).sum(1) / (rows >= 0).sum(1).clamp_min(1)
    gi = gp[~word_given]
    fb_tot = torch.zeros(n_given).index_add_(0, gi, fb)
    c = counts[~word_given]
    c_tot = torch.zeros(n_given).index_add_(0, gi, c)
    fbn = fb / fb_tot[gi].clamp_min(_TINY)
    cn = c / c_tot[gi].clamp_min(_TINY)
    ph[~word_given] = torch.where(c_tot[gi] > 0, 0.5 * cn + 0.5 * fbn, fbn)
    table[P + 1:] = ph
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
