"""The one aligned-model interface of every word-alignment family (no torch import here).

Every word family (`aligners.families()` with verb "align") has one class deriving from
`WordAlignment`. A fitted or loaded model answers

    model.align(source_lines, target_lines)       -> [[(i, j), ...], ...]   0-based sure links
    model.posteriors(source_lines, target_lines)  -> [{(i, j): p, ...}, ...]
    model.save(folder)

(lines are strings split on whitespace, or token lists; the family's default decoding, or
the one saved with the model, unless `method=`, `threshold=`, `symmetrize=` say otherwise).
`aligners align`, the Hydra tasks and the benchmarks all go through the same three steps:

    model, aligned = Family.fit(pairs, config, run)      # train; `aligned`: the same text
    aligned = model.decode(pairs, run)                     # a loaded model on new text
    aligned.lines(("fwd", "rev", "sym"), decoding, posteriors=False)

so each family's pipeline exists once. `Aligned.lines` gives Pharaoh lines (`i-j`, 0-based,
source-target order for both directions; `i-j:p` with posteriors, written by
`aligners.data.pharaoh.link_line`): "fwd" and "rev" are each direction's links, "sym" the
links of the decoding (`decoding.symmetrize` applied where the method is not symmetric).
"""

from __future__ import annotations

import contextlib
import sys
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from aligners.config_checks import UNIT, Rule, check, check_value, maybe, setting
from aligners.data import DEFAULT_CELLS, GPU_CELLS, default_cells
from aligners.errors import AlignersInputError
from aligners.families import family
from aligners.symmetrize import HEURISTICS

__all__ = ["Link", "LARGE", "SYMMETRIC", "Decoding", "TuneGrid", "RunOptions",
           "Aligned", "WordAlignment", "token_pairs", "parse_line", "auto_family", "align"]

Link = tuple[int, int]


@dataclass(frozen=True)
class Decoding:
    """How links are read off a model: `method` ("agreement": product of the two directions'
    link posteriors > threshold; "mean": their mean > threshold; "posterior": each direction
    > threshold; "viterbi": each direction's best path), `threshold` in [0, 1] (None: the
    family's default for the text, by its size), and `symmetrize`, the atools heuristic that
    combines the two directions ("none": a symmetric method's links as they are)."""

    method: str
    threshold: float | None = setting(rule=maybe(UNIT))
    symmetrize: str = setting(rule=Rule("str", choices=("none", *HEURISTICS)))

    def check(self, methods: Sequence[str]) -> Decoding:
        """self, or AlignersInputError (one line) naming the bad value; `methods`: those the
        family supports."""
        check_value("decoding method", self.method, Rule("str", choices=tuple(methods)))
        return check(self, names={"threshold": "decoding threshold"})


SYMMETRIC = ("agreement", "mean")  # methods whose links combine both directions already


@dataclass
class TuneGrid:
    """The decodings a Hydra task searches on its tuning split (`aligners.inference.choose`):
    the `tune_grid` of a word family's model config. A family sets its own defaults by
    subclassing (its model schema carries them)."""

    methods: list[str] = setting(rule=Rule("str", each=True, nonempty=True),  # a family's
                                 factory=lambda: ["agreement", "posterior", "viterbi"])
    thresholds: list[float] = setting(rule=Rule("float", lo=0, hi=1, each=True),
                                      factory=lambda: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    heuristics: list[str] = setting(  # three of the atools HEURISTICS
        rule=Rule("str", choices=HEURISTICS, each=True, nonempty=True),
        factory=lambda: ["intersect", "grow-diag", "grow-diag-final-and"])


@dataclass
class RunOptions:
    """How a model runs (not what it is): device, CPU threads, padded cells per batch (None:
    the device's default), a disk cache for the pair index, sampler seed, progress bars, and
    where the time goes (`phases`: "index" and "train" are charged by the families)."""

    device: str = "cpu"
    threads: int = setting(1, Rule("int", lo=1), flag="--threads",
                           help="torch CPU threads (default: {default})")
    batch_cells: int | None = setting(
        None, Rule("int", lo=1, nullable=True), flag="--batch-cells",
        help=f"padded source x target cells per batch (default {DEFAULT_CELLS} on the CPU, "
             f"{GPU_CELLS} on a GPU)")
    cache_dir: str | None = setting(None, flag="--cache-dir", help="keep the pair-id index "
                                    "in memory-mapped files here (large corpora)")
    seed: int = setting(0, Rule("int", lo=0), flag="--seed", help="random seed, >= 0 (the "
                        "Bayesian sampler; runs are reproducible)")
    progress: bool = False
    phases: Any = None  # an aligners.timing.Phases that the steps charge, or None

    def phase(self, name: str):
        """A `with` block timed as phase `name` in `phases` (nothing without)."""
        return contextlib.nullcontext() if self.phases is None else self.phases(name)

    def bar(self, total: int, desc: str):
        """A tqdm progress bar on stderr (shown only when `progress`)."""
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, disable=not self.progress, file=sys.stderr)

    def cells(self) -> int:
        return self.batch_cells or default_cells(self.device)


def token_pairs(source: Iterable, target: Iterable | None = None, *, make=None) -> list:
    """[(source tokens, target tokens)] from two parallel sequences of sentences, or (no
    `target`) from one sequence of (source, target) pairs (or objects with `src` / `tgt`);
    each sentence a string (split on whitespace) or its tokens: what every family's
    `align(source, target)` takes. `make(source tuple, target tuple)` builds each pair
    instead (pairs that all are `make`s already are returned as given). AlignersInputError
    when the lengths differ or a string stands where a list of sentences or pairs is expected
    (its characters would be aligned)."""
    if target is None:
        pairs = [source] if isinstance(source, str) else list(source)
        if any(isinstance(p, str) for p in pairs):
            raise AlignersInputError("expected a list of (source, target) pairs, got a string")
        if make is not None and all(isinstance(p, make) for p in pairs):
            return pairs
        source = [p.src if hasattr(p, "src") else p[0] for p in pairs]
        target = [p.tgt if hasattr(p, "tgt") else p[1] for p in pairs]
    for name, side in (("source", source), ("target", target)):
        if isinstance(side, str):
            raise AlignersInputError(f"{name}: expected a list of sentences, got one string; "
                                     f"wrap it in a list: [{side[:40]!r}]")
    def tokens(x):
        return x.split() if isinstance(x, str) else list(x)

    src, tgt = [tokens(s) for s in source], [tokens(t) for t in target]
    if len(src) != len(tgt):
        raise AlignersInputError(f"{len(src)} source lines but {len(tgt)} target lines")
    return [make(tuple(s), tuple(t)) for s, t in zip(src, tgt)] if make else list(zip(src, tgt))


def parse_line(line: str) -> tuple[list[Link], list[float] | None]:
    """Links (and posteriors, for `i-j:p`) of one Pharaoh line written by `link_line`."""
    links, probs = [], []
    for tok in line.split():
        pair, _, p = tok.partition(":")
        i, _, j = pair.partition("-")
        links.append((int(i), int(j)))
        if p:
            probs.append(float(p))
    return links, (probs if probs else None)


class Aligned(ABC):
    """One text aligned by a model (the result of `fit` or `decode`)."""

    @abstractmethod
    def lines(self, outputs: Sequence[str], decoding: Decoding, *,
              posteriors: bool = False) -> dict[str, Iterable[str]]:
        """output name ("fwd", "rev", "sym") -> one Pharaoh line per pair, in input order."""


class WordAlignment(ABC):
    """Base of every word family's fitted or loaded model (see the module doc).

    Subclasses set `family` (the family's name), `METHODS` (the decodings it supports) and
    `DEFAULT` (its default Decoding) and implement `fit`, `decode`, `save_to` and
    `from_folder`; `decoding` is the saved (or chosen) decoding, None for the default.
    """

    family: ClassVar[str]
    METHODS: ClassVar[tuple[str, ...]] = ("agreement", "posterior", "viterbi")
    DEFAULT: ClassVar[Decoding]
    USES_TORCH: ClassVar[bool] = True  # False: runs on the CPU without importing torch
    decoding: Any = None

    # ---------------------------------------------------------------- the family's part
    @classmethod
    @abstractmethod
    def fit(cls, pairs: Iterable, config: Any, run: RunOptions) -> tuple[WordAlignment, Aligned]:
        """Train on `pairs` (token pairs); return the model and the alignment of that text."""

    @abstractmethod
    def decode(self, pairs: Iterable, run: RunOptions) -> Aligned:
        """Align new text `pairs` with this model (no retraining of what it learnt)."""

    @abstractmethod
    def save_to(self, folder, decoding: Decoding):
        """Write the model folder (`aligners.export.write_model`) with `decoding` saved."""

    @classmethod
    @abstractmethod
    def from_folder(cls, folder) -> WordAlignment:
        """The model of a read `aligners.export.ModelFolder` of this family."""

    # ---------------------------------------------------------------- shared
    def saved_decoding(self) -> Decoding | None:
        """The decoding saved with the model, as a Decoding (None when none was saved)."""
        d = self.decoding
        if not d or isinstance(d, Decoding):  # (else a dict read from config.json)
            return d or None
        th = d.get("threshold", self.DEFAULT.threshold)
        return Decoding(d.get("method", self.DEFAULT.method), None if th is None else float(th),
                        d.get("symmetrize", d.get("heuristic", self.DEFAULT.symmetrize)))

    def checked(self, folder) -> WordAlignment:
        """self, after checking the decoding saved in `folder` (a loaded model): one
        AlignersInputError naming its config.json when a value is out of range."""
        where = f"{getattr(folder, 'path', folder)}/config.json"
        try:
            saved = self.saved_decoding()
            if saved is not None:
                saved.check(self.METHODS)
        except AlignersInputError as err:
            raise AlignersInputError(f"saved {err.reason}", path=where) from None
        except (KeyError, TypeError, ValueError) as err:
            raise AlignersInputError(f"saved decoding is not valid ({err!r})",
                                     path=where) from None
        return self

    @classmethod
    def decoding_for(cls, saved: Decoding | None, method: str | None = None,
                     threshold: float | None = None, symmetrize: str | None = None) -> Decoding:
        """The decoding to use: what is given, else what was `saved`, else the family's
        default. A saved heuristic is kept only with its own method; otherwise a symmetric
        method (`SYMMETRIC`) gets "none" and the others grow-diag-final-and. Checked here
        (one line naming the bad value, `Decoding.check`), before any work starts."""
        base = saved or cls.DEFAULT
        method = method or base.method
        th = base.threshold if threshold is None else threshold
        if symmetrize is None:
            if saved is not None and method == saved.method:
                symmetrize = saved.symmetrize
            else:
                symmetrize = "none" if method in SYMMETRIC else "grow-diag-final-and"
        return Decoding(method, th, symmetrize).check(cls.METHODS)

    def choose_decoding(self, method: str | None = None, threshold: float | None = None,
                        symmetrize: str | None = None) -> Decoding:
        """`decoding_for` this model's saved decoding."""
        return self.decoding_for(self.saved_decoding(), method, threshold, symmetrize)

    def save(self, folder, decoding: Decoding | None = None):
        """Write the model folder `folder` (with `decoding`, else the chosen one)."""
        return self.save_to(folder, decoding or self.choose_decoding())

    def align(self, source, target=None, *, run: RunOptions | None = None,
              **decoding) -> list[list[Link]]:
        """Sure links per pair, 0-based (i, j), sorted (see the module doc); `source` and
        `target` as `token_pairs` takes them (no `target`: a list of pairs)."""
        lines = self._lines(source, target, run, decoding, posteriors=False)
        return [parse_line(x)[0] for x in lines]

    def posteriors(self, source, target=None, *, run: RunOptions | None = None,
                   **decoding) -> list[dict[Link, float]]:
        """{(i, j): posterior} of each pair's decoded links."""
        out = []
        for x in self._lines(source, target, run, decoding, posteriors=True):
            links, probs = parse_line(x)
            out.append(dict(zip(links, probs or [1.0] * len(links))))
        return out

    def _lines(self, source, target, run, decoding, *, posteriors: bool) -> list[str]:
        dec = self.choose_decoding(**decoding)
        aligned = self.decode(token_pairs(source, target), run or RunOptions())
        return list(aligned.lines(("sym",), dec, posteriors=posteriors)["sym"])


LARGE = 500_000  # sentence pairs from which the auto rule picks the HMM (docs/word.md)


def auto_family(device: str = "cpu", n_pairs: int | None = None) -> tuple[str, str]:
    """(family, reason): the word family that `--model auto` (the default) picks for a text
    of `n_pairs` sentence pairs (None: unknown, e.g. stdin) on `device`.

    Below LARGE pairs, "bayesian" (on the CPU whatever the device): of our families it has
    the lowest AER on every shipped gold set but En-Hi and Europarl De-En, and on Hansards
    up to 200k pairs (RESULTS.md); at 500k the HMM ties it (0.0600 against 0.0602) and on the
    full 1.13M set it wins (0.0550 against 0.0568), so from LARGE pairs on, "hmm", which runs
    on `device` (the measured crossover: docs/word.md, "The auto rule"). On a GPU the HMM
    would be faster below LARGE too, and less accurate: the reason says so.
    """
    gpu = str(device).split(":")[0] != "cpu"
    if n_pairs is not None and n_pairs >= LARGE:
        return "hmm", f"auto: {n_pairs:,} pairs >= {LARGE:,}, on {device}"
    size = "size unknown" if n_pairs is None else f"{n_pairs:,} pairs < {LARGE:,}"
    if gpu:
        return "bayesian", (f"auto: {size}, on the CPU: the most accurate here; --model hmm "
                            f"runs on {device}, faster and less accurate")
    return "bayesian", f"auto: {size}"


def align(source: Iterable, target: Iterable, model: str = "auto",
          **options) -> list[list[Link]]:
    """Train a word family on the text and return its sure links, in one line:

        aligners.align(["a house", ...], ["une maison", ...], model="bayesian", seed=1)

    `model`: a family name (`aligners.families("align")`) or "auto" (`auto_family`);
    `options`: fields of the family's config dataclass (or `config=` an instance), of the
    decoding (`method`, `threshold`, `symmetrize`) and of `RunOptions` (`device`, `threads`,
    `seed`, ...). Returns one sorted list of 0-based (i, j) links per pair, exactly what
    `aligners align --model MODEL` writes to stdout for the same text and options.
    """
    run = check(RunOptions(**{f.name: options.pop(f.name) for f in fields(RunOptions)
                              if f.name in options}))
    dec = {k: options.pop(k) for k in ("method", "threshold", "symmetrize") if k in options}
    if model == "auto":
        source = source if isinstance(source, Sequence) else list(source)
        model = auto_family(run.device, len(source))[0]
    fam = family(model, verb="align")
    cls = fam.model_class()
    config = check(options.pop("config", None) or fam.config_class()(**options))
    decoding = cls.decoding_for(None, **dec)
    _, aligned = cls.fit(token_pairs(source, target), config, run)
    return [parse_line(x)[0] for x in aligned.lines(("sym",), decoding)["sym"]]
