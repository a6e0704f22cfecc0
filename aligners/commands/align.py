"""`aligners align`: word-align a bitext (IBM1 -> HMM, both directions, by agreement).

    aligners align -i corpus.src-tgt --symmetrize grow-diag-final-and > out.align
    aligners align -s text.en -t text.fr -f fwd.align -r rev.align --save-model model/
    aligners align -i new.src-tgt --load-model model/ --posteriors > new.align

Output: Pharaoh `i-j` (0-based, source-target order for both directions). -f/-r write each
direction; -o (or stdout when neither -f/-r nor -o is given, or when --symmetrize is) gets
the symmetrized links of the chosen decoding: --symmetrize HEURISTIC, else none for
agreement decoding (symmetric already), grow-diag-final-and otherwise.
Input lines wrapped as `<s snum=N> tokens </s>` (the WPT/NAACL test files) are unwrapped;
both sides must then be wrapped with the same sentence numbers in the same order.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
from pathlib import Path

from aligners.data import DEFAULT_CELLS, GPU_CELLS, default_cells
from aligners.errors import AlignersInputError
from aligners.models.word.config import WordAlignConfig, WordDecoding

__all__ = ["add_arguments", "run"]


def _int_at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        return value
    return parse


def _float_in(low: float, high: float, *, high_open: bool = False):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        above = value >= high if high_open else value > high
        if not math.isfinite(value) or value < low or above:
            bracket = ")" if high_open else "]"
            raise argparse.ArgumentTypeError(f"must be in [{low}, {high}{bracket}, got {text}")
        return value
    return parse


def add_arguments(p: argparse.ArgumentParser) -> None:
    io = p.add_argument_group("input / output")
    io.add_argument("-i", "--input", help="'source ||| target' file ('-' = stdin)")
    io.add_argument("-s", "--source",
                    help="source file, one sentence per line ('-' = stdin); WPT/NAACL "
                         "'<s snum=N> ... </s>' lines are unwrapped")
    io.add_argument("-t", "--target", help="target file, one sentence per line")
    io.add_argument("-f", "--forward-links", help="write forward links (source-target order)")
    io.add_argument("-r", "--reverse-links", help="write reverse links (source-target order)")
    io.add_argument("-o", "--output", default=None,
                    help="write the symmetrized links here (default: stdout when no -f/-r)")
    io.add_argument("--symmetrize", default=None, metavar="HEURISTIC",
                    help="atools heuristic for stdout/-o (intersect, union, grow-diag, "
                         "grow-diag-final, grow-diag-final-and); default: none for agreement "
                         "decoding, grow-diag-final-and otherwise")
    io.add_argument("--posteriors", action="store_true", help="write links as i-j:p")
    io.add_argument("--lowercase", action="store_true", help="lowercase the input")
    train, dec = WordAlignConfig(), WordDecoding()  # the one place of every default
    m = p.add_argument_group("model")
    m.add_argument("--model", choices=tuple(_FAMILIES.values()), default=None,
                   help="hmm: word HMM by agreement (default); gappy-hsmm: phrasal + gappy "
                        "hidden semi-Markov model by agreement (Bansal et al. 2011); "
                        "bayesian: collapsed Gibbs sampling (Östling & Tiedemann 2016); "
                        "with --load-model: the saved model's family")
    m.add_argument("--phrasal-iterations", type=_int_at_least(0), default=5,
                   help="gappy-hsmm: EM iterations of the phrasal model (default: the "
                        "paper's 5; Hansards dev preferred 2 after --ibm1-iterations 3 "
                        "--hmm-iterations 3 and --phrasal-p0 0.2: see its experiment)")
    m.add_argument("--phrasal-p0", type=_float_in(0.0, 1.0, high_open=True),
                   default=None,
                   help="gappy-hsmm: the phrasal model's NULL probability, in [0, 1) "
                        "(default: the paper's, PhrasalConfig.p0)")
    m.add_argument("--no-gappy", action="store_true",
                   help="gappy-hsmm: contiguous phrases only")
    m.add_argument("--save-model", metavar="DIR", help="save the trained model (safetensors)")
    m.add_argument("--load-model", metavar="DIR", help="align with a saved model, no training")
    m.add_argument("--ibm1-iterations", type=_int_at_least(0), default=train.ibm1_iterations,
                   help="default %(default)s")
    m.add_argument("--hmm-iterations", type=_int_at_least(0), default=train.hmm_iterations,
                   help="default %(default)s")
    m.add_argument("--no-agreement", action="store_true", help="train the directions apart")
    m.add_argument("--p0", type=_float_in(0.0, 1.0, high_open=True), default=train.p0,
                   help="HMM NULL probability, in [0, 1) (default %(default)s)")
    m.add_argument("--max-jump", type=_int_at_least(1), default=train.max_jump,
                   help="default %(default)s")
    m.add_argument("--alpha", type=_float_in(0.0, math.inf, high_open=True),
                   default=train.alpha, help="Dirichlet prior (VB), 0 = EM (default %(default)s)")
    d = p.add_argument_group("decoding")
    d.add_argument("--decoding", choices=("viterbi", "posterior", "agreement"), default=None,
                   help=f"default: the saved model's, else {dec.method}")
    d.add_argument("--threshold", type=_float_in(0.0, 1.0), default=None,
                   help=f"posterior threshold in [0, 1] (default: the saved model's, else "
                        f"{dec.threshold})")
    r = p.add_argument_group("running")
    r.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    r.add_argument("--threads", type=_int_at_least(1), default=1, help="torch CPU threads")
    r.add_argument("--batch-cells", type=_int_at_least(1), default=None,
                   help=f"padded source x target cells per batch (default {DEFAULT_CELLS} on "
                        f"the CPU, {GPU_CELLS} on a GPU)")
    r.add_argument("--cache-dir", default=None,
                   help="keep the pair-id index in memory-mapped files here (large corpora)")
    r.add_argument("-q", "--quiet", "--no-progress", dest="quiet", action="store_true",
                   help="no progress bars and no summary line on stderr")
    from aligners.commands._align_bayes import add_bayes_arguments

    add_bayes_arguments(p)


_SNUM = re.compile(r"<s\s+snum\s*=\s*[\"']?(\d+)[\"']?\s*>(.*?)</s>\Z")


def _unwrap(tokens: list[str], wrapped: bool, name: str, line: int):
    """(snum or None, tokens) of one side; `wrapped` says whether the side's first line was."""
    m = _SNUM.match(" ".join(tokens)) if tokens and tokens[0].startswith("<s") else None
    if wrapped and m is None:
        raise AlignersInputError("expected '<s snum=N> tokens </s>' like the first line",
                                 path=name, line=line)
    if m is None:
        return None, tokens
    if not wrapped:
        raise AlignersInputError("'<s snum=N>'-wrapped line in unwrapped text", path=name,
                                 line=line)
    return int(m.group(1)), m.group(2).split()


def _snum_aware(pairs, src_name: str, tgt_name: str):
    """Strip `<s snum=N> ... </s>` wrappers (WPT/NAACL text); both sides or neither."""
    wrapped = None
    for line, (s, t) in enumerate(pairs, start=1):
        if wrapped is None:
            wrapped = tuple(bool(x) and x[0].startswith("<s") and
                            _SNUM.match(" ".join(x)) is not None for x in (s, t))
            if wrapped[0] != wrapped[1]:
                which = src_name if wrapped[0] else tgt_name
                raise AlignersInputError(
                    f"{which} is '<s snum=N> ... </s>'-wrapped but the other side is not; "
                    "give both sides in the same format", line=1)
        if not wrapped[0]:
            yield s, t
            continue
        ns, s = _unwrap(s, True, src_name, line)
        nt, t = _unwrap(t, True, tgt_name, line)
        if ns != nt:
            raise AlignersInputError(f"sentence numbers differ: source snum={ns}, target "
                                     f"snum={nt}", path=tgt_name, line=line)
        yield s, t


def _read(args):
    from aligners.data.parallel import read_parallel

    if args.input is not None:
        if args.source or args.target:
            raise AlignersInputError("give either -i or -s/-t, not both")
        name = "<stdin>" if args.input == "-" else args.input
        return _snum_aware(read_parallel(args.input, lowercase=args.lowercase), name, name)
    if not (args.source and args.target):
        raise AlignersInputError("give -i FILE ('src ||| tgt') or both -s SRC and -t TGT")
    return _snum_aware(read_parallel(args.source, args.target, lowercase=args.lowercase),
                       args.source, args.target)


def _check_writable_file(path: str | None, flag: str) -> None:
    """Fail before training when an output file cannot be created."""
    if path is None or path == "-":
        return
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise AlignersInputError(f"{flag}: is a directory, expected a file path", path=path)
    if not parent.is_dir():
        raise AlignersInputError(f"{flag}: directory {parent} does not exist", path=path)
    if not os.access(parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise AlignersInputError(f"{flag}: not writable", path=path)


def _check_writable_dir(path: str | None, flag: str) -> None:
    if path is None:
        return
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise AlignersInputError(f"{flag}: exists and is not a directory", path=path)
    probe = target
    while not probe.exists():  # the first existing ancestor must be a writable directory
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK):
        raise AlignersInputError(f"{flag}: cannot create or write {path} ({probe} is not a "
                                 "writable directory)", path=path)
    try:  # os.access says yes to root for /proc and read-only mounts: try it for real
        os.rmdir(tempfile.mkdtemp(prefix=".aligners-probe-", dir=probe))
    except OSError as err:
        raise AlignersInputError(f"{flag}: cannot create or write {path} ({probe}: "
                                 f"{err.strerror})", path=path) from None


def run(args: argparse.Namespace) -> int:
    family = _family(args)
    if family == "bayesian":  # before importing torch: the sampler does not need it
        from aligners.commands._align_bayes import run_bayes

        for dest, flag in ((args.forward_links, "-f"), (args.reverse_links, "-r"),
                           (args.output, "-o")):
            _check_writable_file(dest, flag)
        _check_writable_dir(args.save_model, "--save-model")
        return run_bayes(args, _read(args), _write)
    import torch
    from tqdm import tqdm

    from aligners.commands._device import torch_device
    from aligners.inference.decode import decode_lines

    torch_device(args.device)
    torch.set_num_threads(max(1, args.threads))
    if args.batch_cells is None:
        args.batch_cells = default_cells(args.device)
    for dest, flag in ((args.forward_links, "-f"), (args.reverse_links, "-r"),
                       (args.output, "-o")):
        _check_writable_file(dest, flag)
    _check_writable_dir(args.save_model, "--save-model")
    pairs = _read(args)
    show = not args.quiet and sys.stderr.isatty()
    if family == "gappy-hsmm":
        from aligners.commands._align_phrasal import run_phrasal

        return run_phrasal(args, pairs, show)
    saved = None
    if args.load_model:
        aligner = _load(args.load_model).to(args.device)  # batches follow the model
        model, src_ids, tgt_ids, saved = (aligner.model, aligner.src_ids, aligner.tgt_ids,
                                          aligner.decoding)
        index = aligner.index(pairs, cells=args.batch_cells, cache_dir=args.cache_dir)
        index.to(args.device)  # built on the CPU; batches move to the model's device once
    else:
        from aligners.data.bitext import build_index
        from aligners.data.vocab import WordIds
        from aligners.models.word.agreement import WordAligner

        src_ids, tgt_ids = WordIds(), WordIds()
        index = build_index(pairs, src_ids, tgt_ids, cells=args.batch_cells,
                            cache_dir=args.cache_dir)
        config = WordAlignConfig(
            ibm1_iterations=args.ibm1_iterations, hmm_iterations=args.hmm_iterations,
            agreement=not args.no_agreement, p0=args.p0, max_jump=args.max_jump,
            alpha=args.alpha,
        )
        model = WordAligner.from_index(index, config).to(args.device)
        index.to(args.device)  # batches move once, not every EM iteration
        model.reset_counts()
        bar = tqdm(total=model.n_iterations * len(index), desc="EM", disable=not show,
                   file=sys.stderr)
        model.fit(index, progress=lambda it, k: bar.update(1))
        bar.close()
    default = saved or WordDecoding()
    method = args.decoding or default.method
    threshold = args.threshold if args.threshold is not None else default.threshold
    saved_sym = saved.symmetrize if saved is not None and args.decoding is None else None
    heuristic = args.symmetrize
    if heuristic is None:
        heuristic = saved_sym or ("none" if method == "agreement" else "grow-diag-final-and")
    if args.save_model:
        from aligners.models.word.saved import save_word_aligner

        try:
            save_word_aligner(args.save_model, model, src_ids, tgt_ids,
                              decoding=WordDecoding(method=method, threshold=threshold,
                                                    symmetrize=heuristic))
        except OSError as err:
            raise AlignersInputError(f"--save-model: cannot write the model: {err.strerror}",
                                     path=args.save_model) from None
    want = []
    if args.forward_links:
        want.append("fwd")
    if args.reverse_links:
        want.append("rev")
    if args.output is not None or args.symmetrize is not None or not want:
        want.append("sym")
    bar = tqdm(total=index.n_sentences, desc="align", disable=not show, file=sys.stderr)
    lines = decode_lines(model, index, method=method, threshold=threshold, heuristic=heuristic,
                         posteriors=args.posteriors, outputs=tuple(want), progress=bar.update)
    bar.close()
    args.summary = f"{index.n_sentences} sentence pairs aligned"
    for name, dest in (("fwd", args.forward_links), ("rev", args.reverse_links),
                       ("sym", args.output or "-")):
        if name in lines:
            _write(dest, lines[name])
    return 0


# saved model kind -> the --model family that aligns with it
_FAMILIES = {"word-aligner": "hmm", "phrasal-hsmm": "gappy-hsmm", "bayes-aligner": "bayesian"}


def _family(args: argparse.Namespace) -> str:
    """The model family: --model, else the kind saved in --load-model's folder, else hmm.
    A --model that contradicts the saved kind is one clear error."""
    if not args.load_model:
        return args.model or "hmm"
    from aligners.export import read_config

    try:
        kind = read_config(args.load_model).get("kind")
    except AlignersInputError as err:
        raise AlignersInputError(f"--load-model: {err}") from None
    family = _FAMILIES.get(kind)
    if family is None:
        raise AlignersInputError(f"--load-model: a {kind!r} model does not word-align; "
                                 f"expected one of {sorted(_FAMILIES)}", path=args.load_model)
    if args.model not in (None, family):
        raise AlignersInputError(f"--load-model holds a {family} model, not --model "
                                 f"{args.model}", path=args.load_model)
    return family


def _load(folder: str):
    """`aligners.load(folder)` as a word aligner, with every problem one input error."""
    from safetensors import SafetensorError

    from aligners.export import load
    from aligners.models.word.saved import TrainedWordAligner

    try:
        aligner = load(folder)
    except AlignersInputError as err:
        raise AlignersInputError(f"--load-model: {err}") from None
    except (KeyError, TypeError, ValueError, SafetensorError) as err:
        raise AlignersInputError(f"--load-model: not a valid saved word aligner ({err!r})",
                                 path=folder) from None
    except OSError as err:
        raise AlignersInputError(f"--load-model: cannot read the model: {err}",
                                 path=folder) from None
    if not isinstance(aligner, TrainedWordAligner):
        raise AlignersInputError("--load-model: not a word aligner (kind "
                                 f"{type(aligner).__name__})", path=folder)
    return aligner


def _write(dest: str, lines: list[str]) -> None:
    if dest == "-":
        sys.stdout.write("".join(line + "\n" for line in lines))
        sys.stdout.flush()
        return
    try:
        with open(dest, "w", encoding="utf-8") as fh:
            fh.write("".join(line + "\n" for line in lines))
    except OSError as err:
        raise AlignersInputError(f"cannot write: {err.strerror}", path=dest) from None
