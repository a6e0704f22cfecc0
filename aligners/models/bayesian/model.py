"""The Bayesian IBM1 -> HMM -> HMM+fertility word aligner (Östling & Tiedemann 2016, efmaral):
both directions, several independent collapsed Gibbs samplers, averaged link marginals.

`BayesAligner.align(pairs)` samples the text (training and alignment are one pass, as in
eflomal) and returns `BayesMarginals`: per observed token the Rao-Blackwellised probability
p(a_j = i) of the forward direction (source generates target) and p(a_i = j) of the reverse
one, averaged over samplers and the post-burn-in sweeps of the last stage, kept sparse:
`marginal_slots` (K) positions per token plus NULL (slots._accumulate says exactly which
sums are kept; with K >= I they are the dense marginals). It then keeps the samplers' final
counts, averaged, as its `counts`; a saved model passes them as Dirichlet
pseudo-counts (priors) to the next `align` on new text (eflomal's priors workflow), added to
the symmetric priors: the loaded counts are priors, not fixed distributions.

Schedule (eflomal's defaults): n = max(2, round(rel_iterations * 5000 / sqrt(K))) sweeps for
K sentence pairs; stages IBM1, HMM, HMM+fertility run max(2, n // 4), max(1, n // 4), n
sweeps; marginals accumulate over the last stage after `burn_in` of it. Directions run on
two threads (numba releases the GIL); each direction's samplers run one after another into
one slot store, so results do not depend on thread timing.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass

import numpy as np

from aligners.config_checks import check
from aligners.data import _pairtable as _tab
from aligners.data.vocab import WordIds
from aligners.errors import AlignersInputError
from aligners.models.bayesian import counts as _c
from aligners.models.bayesian import decode as _decode
from aligners.models.bayesian import pair_table as _pt
from aligners.models.bayesian import sampler as _k
from aligners.models.bayesian.config import BayesConfig
from aligners.models.bayesian.corpus import EncodedBitext, encode_bitext
from aligners.models.bayesian.jit import start_compile_child
from aligners.models.bayesian.slots import BayesMarginals, new_slots

_CHUNK_TOKENS = 1 << 18  # observed tokens per sweep call (bounds the uniforms' memory)

__all__ = ["BayesConfig", "BayesCounts", "BayesAligner", "schedule", "exact_kernels",
           "warm_all"]


_AUTO_SLOTS_TOKENS = 2_000_000  # from here on, 2 slots per token instead of 3


def _n_slots(cfg: BayesConfig, n_tokens: int) -> int:
    """Marginal slots per token: the configured number, or (0) 3 below _AUTO_SLOTS_TOKENS
    observed tokens and 2 from there on (2 cost 0.003-0.005 AER on the 250-500-pair sets,
    nothing at Hansards 200k, where a third slot costs 60 MiB; the git log,
    bayes3)."""
    if cfg.marginal_slots:
        return cfg.marginal_slots
    return 3 if n_tokens < _AUTO_SLOTS_TOKENS else 2


def _random_start(rng, a: np.ndarray, chunks, obs_off: np.ndarray, n_gen_sent: np.ndarray,
                  p_null: float) -> None:
    """A sampler's start, in place in `a`: per observed token NULL (-1) with p_null, else a
    uniform position of its sentence's generating side; one chunk of draws at a time."""
    for k0, k1 in chunks:
        t0, t1 = int(obs_off[k0]), int(obs_off[k1])
        n_gen = np.repeat(n_gen_sent[k0:k1], np.diff(obs_off[k0:k1 + 1]))
        null_draw = rng.random(t1 - t0) < p_null
        pos = (rng.random(t1 - t0) * np.maximum(n_gen, 1)).astype(a.dtype)
        a[t0:t1] = np.where(null_draw | (n_gen == 0), -1, pos)


def _single_counts(corpus: EncodedBitext, gen_off, obs_off, fwd: bool, alignments, n_lex: int):
    """The single-cell pairs' counts of each sampler's final `alignments` (ids, counts), kept
    sparse until the pair ids are freed (BayesAligner.align); None when lex holds every
    pair (n_lex == corpus.n_pairs)."""
    if n_lex >= corpus.n_pairs:
        return None
    ids = np.empty(len(alignments[0]), np.int64)
    folded = corpus.single_off if corpus.single_off is not None else np.zeros(0, np.int64)
    got = [ids[:_c.single_pair_ids(gen_off, obs_off, corpus.cell_off, corpus.pair_lo,
                                    corpus.pair_hi, not fwd, a_s, n_lex, ids, folded)].copy()
           for a_s in alignments]
    return np.unique(np.concatenate(got), return_counts=True)


def _average(lex, singles, slots, lex_prior, n_prior_samplers: int, n_samplers: int,
             n_acc: int):
    """In place: lex (the last sampler's prior + every sampler's counts) gets the other
    samplers' priors and is averaged over the samplers, in float32; the marginal slots are
    divided by the accumulated sweeps. Returns the averaged single-cell counts (or None)."""
    if lex_prior is not None and n_prior_samplers:
        lex += np.float32(n_prior_samplers) * lex_prior
    inv = np.float32(1.0 / n_samplers)
    lex *= inv
    if singles is not None:
        singles = (singles[0], singles[1].astype(np.float32) * inv)
    scale = np.float32(1.0 / max(1, n_acc))
    slots.mass *= scale
    slots.null *= scale
    return singles


def exact_kernels() -> tuple:
    """The numba kernels a run of the exact sampler calls from Python (their callees are
    inlined): what `jit.start_compile_child` checks and `warm_all` compiles."""
    return (_k.sweep, _c.add_counts, _c.single_pair_ids, _tab._occurrences, _tab._word_keys,
            _tab._fill_words, _pt._first_seen, _pt._frequency_ids, _pt._renumber,
            _pt._keys_from_ids, _decode._best)


def warm_all() -> None:
    """Compile (and cache) every kernel of `exact_kernels` with the argument types of a real
    run: the exact sampler on a 4-pair corpus (both pair-table halves, all three stages; its
    `align` runs `counts.warmup`, the wide-integer variants) and its decoding; what the
    compiling child of `jit.py` runs. Cost: compile time only."""
    pairs = [("a b c".split(), "x y z".split()), ("b c".split(), "y z".split()),
             ("a c".split(), "x z".split()), ("c".split(), "z w".split())]
    marg = BayesAligner(BayesConfig(iterations=[1, 1, 2], n_samplers=2)).align(pairs)
    for direction in ("fwd", "rev"):
        for _ in _decode.link_lines(marg, heuristic=None, direction=direction):
            pass
    for _ in _decode.link_lines(marg, heuristic="grow-diag-final-and", direction="fwd"):
        pass


def schedule(config: BayesConfig, n_sentences: int) -> list[int]:
    """Sweeps per stage [IBM1, HMM, fertility] (eflomal's corpus-size scaling)."""
    if config.iterations is not None:
        its = list(config.iterations)
    else:
        n = max(2, int(round(config.rel_iterations * 5000 / math.sqrt(max(1, n_sentences)))))
        quarter = max(1, n // 4)
        its = {1: [n, 0, 0], 2: [max(2, quarter), n, 0], 3: [max(2, quarter), quarter, n]}[
            config.model]
    return [its[s] if s < config.model else 0 for s in range(3)]


@dataclass
class BayesCounts:
    """Counts of one direction. lex (P,) over the pair table `keys`; null (V_obs,);
    jump (2 * max_jump + 1,); fert (V_gen, max_fert + 1). float32/float64 arrays."""

    lex: np.ndarray
    null: np.ndarray
    jump: np.ndarray
    fert: np.ndarray


class BayesAligner:
    """Vocabularies, config and (after `align`) the averaged counts of both directions.

    Memory while aligning: 3 bytes per cell for the pair ids (freed before `align` returns;
    4 from 2^24 distinct pairs on, until sampling: while the exact sampler runs without
    priors the single-cell pairs' cells share one id, `EncodedBitext.fold_singles`, and 3
    bytes suffice below 2^24 - 1 shared pairs), no other per-cell array; per observed token and
    direction 8 bytes per marginal slot + 4 (NULL) + 2 (alignment) + 2 per earlier sampler
    (its final alignment, to average the counts); per direction one float32 working count
    array (it becomes the samplers' average) over the pairs seen in two cells or more
    (without saved priors; over all P pairs with them, plus one for the priors); the (P,)
    int64 pair keys are dropped while sampling and rebuilt after, as the pair ids are
    freed, and only then are the (P,) count arrays completed with the single-cell pairs.
    """

    def __init__(self, config: BayesConfig | None = None, *, src_words: Sequence[str] = (),
                 tgt_words: Sequence[str] = (), keys: np.ndarray | None = None,
                 counts: dict[str, BayesCounts] | None = None):
        self.config = config or BayesConfig()
        check(self.config)  # (the fields' rules, then BayesConfig.invariants)
        self.src_ids = WordIds(list(src_words)[2:])
        self.tgt_ids = WordIds(list(tgt_words)[2:])
        self.keys = keys  # (P,) int64 over the vocabularies' sizes at save time
        self.counts = counts  # {"fwd": ..., "rev": ...} or None (no priors)

    # ------------------------------------------------------------------ priors
    def _priors(self, corpus: EncodedBitext, direction: str, *, lazy: bool = False):
        """Prior-filled count arrays for `corpus` (zeros, or this model's counts mapped).

        With `lazy` and no saved counts, lex (the only (P,) array) is None: all zeros.
        """
        fwd = direction == "fwd"
        v_gen = corpus.n_src_words if fwd else corpus.n_tgt_words
        v_obs = corpus.n_tgt_words if fwd else corpus.n_src_words
        cfg = self.config
        lex = None if lazy and self.counts is None else np.zeros(corpus.n_pairs, np.float32)
        lex_den = np.zeros(v_gen, np.float64)
        null = np.zeros(v_obs, np.float64)
        jump = np.zeros(2 * cfg.max_jump + 1, np.float64)
        fert = np.zeros((v_gen, cfg.max_fert + 1), np.float64)
        if self.counts is not None:
            old = self.counts[direction]
            vt_old = self._vt_saved
            s_old, t_old = self.keys // vt_old, self.keys % vt_old
            rekey = s_old * corpus.n_tgt_words + t_old
            order = np.argsort(corpus.keys)  # keys are in frequency order, not sorted
            pos = np.searchsorted(corpus.keys, rekey, sorter=order)
            pos_c = order[np.minimum(pos, len(corpus.keys) - 1)]
            hit = corpus.keys[pos_c] == rekey
            lex[pos_c[hit]] = old.lex[hit]
            np.add.at(lex_den, s_old if fwd else t_old, old.lex.astype(np.float64))
            null[:len(old.null)] = old.null
            jump[:] = old.jump
            fert[:len(old.fert)] = old.fert
        return lex, lex_den, null, jump, fert

    # ------------------------------------------------------------------ sampling
    def _direction(self, corpus: EncodedBitext, direction: str, its: list[int], seed: int,
                   priors, tick=lambda sweeps: None):
        cfg = self.config
        fwd = direction == "fwd"
        gen, gen_off = (corpus.src, corpus.src_off) if fwd else (corpus.tgt, corpus.tgt_off)
        obs, obs_off = (corpus.tgt, corpus.tgt_off) if fwd else (corpus.src, corpus.src_off)
        v_obs = corpus.n_tgt_words if fwd else corpus.n_src_words
        n_gen_sent = np.diff(gen_off)
        max_gen = int(n_gen_sent.max())
        last = max(s for s in range(3) if its[s] > 0)
        n_acc_all = cfg.n_samplers * (its[last] - int(math.floor(cfg.burn_in * its[last])))
        slots = new_slots(len(obs), _n_slots(cfg, len(obs)), max_gen)
        since = np.zeros(slots.pos.shape, np.uint16 if n_acc_all < 65535 else np.int32)
        buf = np.zeros((2, max_gen + 1), np.float64)
        # alignments and fertilities in 2 bytes per token when sentences are short enough
        small_int = np.int16 if max(max_gen, int(np.diff(obs_off).max())) < 32767 else np.int32
        phi = np.zeros(len(gen), small_int)
        a = np.empty(len(obs), small_int)
        chunks = _tab.spans(obs_off, _CHUNK_TOKENS)
        # without a prior, single-cell pairs' counts are neither read nor kept while
        # sampling (always 0 when read, sampler.sweep): lex holds the n_lex shared ids only
        n_lex = max(1, corpus.n_shared) if priors[0] is None and corpus.n_shared >= 0 else \
            corpus.n_pairs
        finals = []  # the earlier samplers' final alignments (2 bytes per token, not a lex copy)
        n_acc = 0
        lex = None
        small = None
        hyper = (cfg.p_null, cfg.lex_alpha, cfg.lex_alpha * v_obs, cfg.null_alpha,
                 cfg.null_alpha * v_obs, cfg.jump_alpha, cfg.jump_alpha * len(priors[3]),
                 cfg.fert_alpha, cfg.max_jump, cfg.max_fert)
        for s in range(cfg.n_samplers):
            rng = np.random.Generator(np.random.PCG64(
                np.random.SeedSequence([seed, 0 if fwd else 1, s])))
            _random_start(rng, a, chunks, obs_off, n_gen_sent, cfg.p_null)
            for stage in range(1, 4):
                n = its[stage - 1]
                if n == 0:
                    continue
                # reset the counts to the priors in place: one (P,) lex array per direction
                lex = np.empty(n_lex, np.float32) if lex is None else lex
                lex[:] = 0.0 if priors[0] is None else priors[0]
                lex_den, null, jump, fert = (x.copy() for x in priors[1:])
                null_den = np.array([null.sum()])
                jump_tot = np.array([jump.sum()])
                args = (gen, gen_off, obs, obs_off, corpus.cell_off, corpus.pair_lo,
                        corpus.pair_hi, not fwd, a, phi, lex, lex_den, null, null_den, jump,
                        jump_tot, fert, np.zeros(len(lex_den)),
                        np.zeros((len(lex_den), cfg.max_fert)))
                _c.add_counts(*args, stage, cfg.max_jump, cfg.max_fert, cfg.lex_alpha * v_obs,
                              cfg.fert_alpha, n_lex)
                start_acc = int(math.floor(cfg.burn_in * n))
                for it in range(n):
                    acc = stage - 1 == last and it >= start_acc
                    for k0, k1 in chunks:  # one uniform stream, drawn a chunk at a time
                        u = rng.random(int(obs_off[k1] - obs_off[k0]))
                        _k.sweep(*args, k0, k1, u, slots.pos, slots.mass, since, slots.null,
                                 acc, n_acc, stage, *hyper, buf, n_lex)
                        tick(1 / len(chunks))  # progress; raises once the run is stopped
                    n_acc += acc
            # the small count arrays averaged in float64; lex from the final alignments below
            part = [x.astype(np.float64) / cfg.n_samplers for x in (null, jump, fert)]
            small = part if small is None else [x + y for x, y in zip(small, part, strict=True)]
            if s < cfg.n_samplers - 1:
                finals.append(a.copy())
        # lex holds prior + counts of the last sampler; add the others' counts (and priors),
        # then average in float32, in place (the last stage's other count arrays, read no
        # more, take the finals' counts too)
        n_prior_samplers = len(finals)
        for a_s in finals:
            _c.add_counts(*args[:8], a_s, *args[9:], 1, cfg.max_jump, cfg.max_fert,
                          cfg.lex_alpha * v_obs, cfg.fert_alpha, n_lex)
        del since, buf, phi
        singles = _single_counts(corpus, gen_off, obs_off, fwd, [*finals, a], n_lex)
        del finals, a
        singles = _average(lex, singles, slots, priors[0], n_prior_samplers, cfg.n_samplers,
                           n_acc)
        return slots, BayesCounts(lex, *small), singles

    def align(self, pairs: Iterable[tuple[Sequence[str], Sequence[str]]], *,
              seed: int = 0, bar=None) -> BayesMarginals:
        """Sample both directions of `pairs` and return their averaged link marginals.

        `bar(total, desc)`: a progress bar (`RunOptions.bar`) counting the sweeps. Ctrl-C
        stops both directions within one chunk of a sweep (~0.1 s).

        This model's counts (if any) are priors; afterwards it holds the new counts
        (averaged over samplers; priors included) and the extended vocabularies.
        Cost O(sum_stage sweeps * n_samplers * sum_k I_k J_k) time, see the class for memory.
        """
        self._vt_saved = len(self.tgt_ids)
        if self.config.lowercase:
            pairs = (([w.lower() for w in s], [w.lower() for w in t]) for s, t in pairs)
        start_compile_child(exact_kernels())  # uncached kernels compile in a child while
        # the text is read (jit.py)
        corpus = encode_bitext(pairs, self.src_ids, self.tgt_ids, threads=self.config.threads)
        its = schedule(self.config, corpus.n_sentences)
        _c.warmup()
        jobs = [(d, seed, self._priors(corpus, d, lazy=True)) for d in ("fwd", "rev")]
        corpus.keys = None  # 8 bytes per pair, not read while sampling: rebuilt after
        if all(p[0] is None for _, _, p in jobs):  # single-cell pairs' ids never read:
            corpus.fold_singles()  # 3 bytes per cell where 2^24 or more pairs took 4
        stop, shown = threading.Event(), None if bar is None else bar(
            total=2 * self.config.n_samplers * sum(its), desc="sampling (sweeps)")

        def tick(sweeps: float) -> None:
            if stop.is_set():  # the other direction was interrupted: stop here too
                raise KeyboardInterrupt
            if shown is not None:
                shown.update(sweeps)
        try:
            if self.config.threads >= 2:
                with ThreadPoolExecutor(max_workers=2) as pool:
                    runs = [pool.submit(self._direction, corpus, d, its, s, p, tick)
                            for d, s, p in jobs]
                    try:  # Ctrl-C or a failure in one: the others stop at their next chunk
                        wait(runs, return_when=FIRST_EXCEPTION)
                        out = [r.result() for r in runs]
                    except BaseException:
                        stop.set()
                        raise
            else:
                out = [self._direction(corpus, d, its, s, p, tick) for d, s, p in jobs]
        finally:
            if shown is not None:
                shown.close()
        # keys rebuilt while the pair ids (3 bytes per cell, not needed to decode) are freed
        corpus.restore_keys()
        self.keys = corpus.keys
        for _, counts, singles in out:  # full (P,) lex counts, now that the ids are gone
            if singles is not None:
                full = np.zeros(corpus.n_pairs, np.float32)
                full[:len(counts.lex)] = counts.lex
                full[singles[0]] = singles[1]
                counts.lex = full
        self.counts = {"fwd": out[0][1], "rev": out[1][1]}
        return BayesMarginals(corpus, out[0][0], out[1][0], its)

    # ------------------------------------------------------------------ export
    def state(self) -> tuple[dict[str, np.ndarray], dict, dict]:
        """(arrays, config dict, vocab dict) for saving; AlignersInputError if never run."""
        if self.counts is None:
            raise AlignersInputError("the model has no counts yet: align a bitext first")
        arrays = {"keys": self.keys}
        for d, c in self.counts.items():
            for name in ("lex", "null", "jump", "fert"):
                arrays[f"{name}_{d}"] = getattr(c, name)
        vocab = {"src": self.src_ids.words, "tgt": self.tgt_ids.words}
        return arrays, asdict(self.config), vocab

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], config: dict, vocab: dict):
        """Inverse of `state`; ValueError when the parts do not fit together. Folders saved
        before the batched sampler was removed name it (`sampler`, `device`, `batch_cells`):
        those keys are ignored."""
        cfg = BayesConfig(**{k: v for k, v in config.items()
                             if k not in ("sampler", "device", "batch_cells")})
        vs, vt = len(vocab["src"]), len(vocab["tgt"])
        counts = {d: BayesCounts(*(np.asarray(arrays[f"{n}_{d}"])
                                   for n in ("lex", "null", "jump", "fert")))
                  for d in ("fwd", "rev")}
        keys = np.asarray(arrays["keys"], dtype=np.int64)
        ok = (len(counts["fwd"].lex) == len(keys) == len(counts["rev"].lex)
              and counts["fwd"].null.shape == (vt,) and counts["rev"].null.shape == (vs,)
              and counts["fwd"].fert.shape == (vs, cfg.max_fert + 1)
              and counts["rev"].fert.shape == (vt, cfg.max_fert + 1)
              and (len(keys) == 0 or (keys.min() >= 0 and keys.max() < vs * vt)))
        if not ok:
            raise ValueError("saved counts do not match the saved vocabularies / config")
        return cls(cfg, src_words=vocab["src"], tgt_words=vocab["tgt"], keys=keys,
                   counts=counts)
