"""`aligners align`: word-align a bitext with any word-alignment family.

    aligners align -i corpus.src-tgt --symmetrize grow-diag-final-and > out.align
    aligners align -s text.en -t text.fr -f fwd.align -r rev.align --save-model model/
    aligners align -i new.src-tgt --load-model model/ --posteriors > new.align

`--model` picks the family (`aligners.families("align")`; default `auto`, see `auto_family`),
or `--load-model` a saved model, whose kind names its family. Every family goes through the
same pipeline (`aligners.models.aligned`): fit (or load and decode new text), then write.
Output: Pharaoh `i-j` (0-based, source-target order for both directions). -f/-r write each
direction; -o (or stdout when neither -f/-r nor -o is given, or when --symmetrize is) gets
the links of the chosen decoding: --symmetrize HEURISTIC, else the saved one, else none for
agreement decoding (symmetric already), grow-diag-final-and otherwise.
Input lines wrapped as `<s snum=N> tokens </s>` (the WPT/NAACL test files) are unwrapped;
both sides must then be wrapped with the same sentence numbers in the same order.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys

from aligners.cli_types import add_options, from_options
from aligners.commands._device import auto_device, thread_count, torch_device
from aligners.config_checks import Rule, check, check_value
from aligners.data.parallel import is_plain_file, read_parallel
from aligners.errors import AlignersInputError
from aligners.families import Family, by_kind, families, family
from aligners.models.aligned import Decoding, RunOptions, auto_family
from aligners.outputs import check_folder_path, check_model_dir, check_paths, write_lines
from aligners.timing import Phases, peak_memory

__all__ = ["add_arguments", "run"]


def _options_module(fam: Family):
    """The module of a family's config dataclass: its `add_arguments` / `from_args` (and,
    optionally, `adjust_loaded(model, args)`)."""
    return importlib.import_module(fam.config.partition(":")[0])


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
                         "grow-diag-final, grow-diag-final-and); default: the saved model's, "
                         "else none for agreement decoding, grow-diag-final-and otherwise")
    io.add_argument("--posteriors", action="store_true", help="write links as i-j:p")
    io.add_argument("--lowercase", action="store_true", help="lowercase the input")
    word = families("align")
    m = p.add_argument_group("model")
    m.add_argument("--model", choices=("auto", *(f.name for f in word)), default=None,
                   help="auto (default): " + AUTO_RULE + "; " +
                        "; ".join(f"{f.name}: {f.summary} ({f.paper})" for f in word) +
                        "; with --load-model: the saved model's family")
    m.add_argument("--save-model", metavar="DIR", help="save the trained model (safetensors)")
    m.add_argument("--overwrite", action="store_true",
                   help="--save-model may replace a model folder of another family")
    m.add_argument("--load-model", metavar="DIR", help="align with a saved model, no training")
    for f in word:
        _options_module(f).add_arguments(p)
    d = p.add_argument_group("decoding")
    methods = tuple(dict.fromkeys(m for f in word for m in _options_module(f).METHODS))
    d.add_argument("--decoding", choices=methods, default=None,
                   help="default: the saved model's, else the family's (" +
                        ", ".join(f"{f.name} {_options_module(f).DECODING.method}" for f in word)
                        + ")")
    d.add_argument("--threshold", type=float, default=None,
                   help="posterior threshold in [0, 1] (default: the saved model's, else the "
                        "family's: " + ", ".join(
                            f"{f.name} {_options_module(f).DECODING.threshold or 'by size'}"
                            for f in word) + ")")
    r = p.add_argument_group("running")
    r.add_argument("--device", default="auto",
                   help="auto (default: cuda where torch sees a GPU, else cpu), cpu, or cuda")
    add_options(r, RunOptions, "threads", "seed", "batch_cells", "cache_dir")
    r.add_argument("-q", "--quiet", "--no-progress", dest="quiet", action="store_true",
                   help="no progress bars and no summary line on stderr")
    r.add_argument("-v", "--verbose", action="store_true",
                   help="the summary line (where the time went: read, index, train, decode, "
                        "write) also on a terminal")


AUTO_RULE = ("bayesian below 500,000 sentence pairs (on the CPU), hmm from there on (on "
             "--device; see aligners.models.aligned.auto_family)")
_PHASES = ("read", "index", "train", "decode", "write")  # the summary's order
_DECODING_FLAGS = {"method": "--decoding", "threshold": "--threshold",
                   "symmetrize": "--symmetrize"}


def _check_decoding(given: tuple, cls) -> None:
    """The decoding options given (method, threshold, symmetrize), by the rules of
    `Decoding` and the family's methods: one line naming the flag."""
    if given[0] is not None:
        check_value("--decoding", given[0], Rule("str", choices=cls.METHODS))
    check({k: v for k, v in zip(_DECODING_FLAGS, given) if v is not None}, Decoding,
          names=_DECODING_FLAGS)


def _refuse_ignored_options(args: argparse.Namespace, fam: Family, why: str) -> None:
    """An option set to a non-default value that `fam` would silently ignore is refused, one
    line: an option of another family (a family's config module may name another family
    whose options it also reads, `OPTIONS_OF`, e.g. gappy-hsmm's word HMM start), and with
    --load-model a training option (all but the config module's `LOADED_OPTIONS`)."""
    module = _options_module(fam)
    mine = {fam.name, *getattr(module, "OPTIONS_OF", ())}
    loaded = set(getattr(module, "LOADED_OPTIONS", ()))
    for name, own in _own_options().items():
        for dest, (flag, default) in own.items():
            if getattr(args, dest, default) == default:
                continue
            if name not in mine:
                raise AlignersInputError(f"{flag} is an option of --model {name}, not of the "
                                         f"{fam.name} model used here ({why}); add --model "
                                         f"{name} or drop {flag}")
            if args.load_model and dest not in loaded:
                raise AlignersInputError(f"{flag} is a training option; --load-model aligns "
                                         "with the saved model as trained: drop it")


def _own_options() -> dict[str, dict]:
    """family -> {dest: (flag, default)} of the options its config module adds (each
    family's `add_arguments` on a parser of its own)."""
    own = {}
    for f in families("align"):
        q = argparse.ArgumentParser(add_help=False)
        _options_module(f).add_arguments(q)
        own[f.name] = {a.dest: (a.option_strings[0], a.default) for a in q._actions}
    return own


_SNUM = re.compile(r"<s\s+snum\s*=\s*[\"']?(\d+)[\"']?\s*>(.*?)</s>\Z")


def _match(tokens: list[str]):
    return _SNUM.match(" ".join(tokens)) if tokens and tokens[0].startswith("<s") else None


def _snum_aware(pairs, src_name: str, tgt_name: str):
    """Strip `<s snum=N> ... </s>` wrappers (WPT/NAACL text); both sides or neither, as on
    the first line (a wrapped line later in unwrapped text is an error), with equal numbers."""
    wrapped = None
    for line, (s, t) in enumerate(pairs, start=1):
        ms, mt = _match(s), _match(t)
        if wrapped is None:
            wrapped = ms is not None
            if wrapped != (mt is not None):
                which = src_name if wrapped else tgt_name
                raise AlignersInputError(
                    f"{which} is '<s snum=N> ... </s>'-wrapped but the other side is not; "
                    "give both sides in the same format", line=1)
        for m, name in ((ms, src_name), (mt, tgt_name)):
            if wrapped and m is None:
                raise AlignersInputError("expected '<s snum=N> tokens </s>' like the first "
                                         "line", path=name, line=line)
            if m is not None and not wrapped:
                raise AlignersInputError("'<s snum=N>'-wrapped line in unwrapped text",
                                         path=name, line=line)
        if not wrapped:
            yield s, t
            continue
        ns, nt = int(ms.group(1)), int(mt.group(1))
        if ns != nt:
            raise AlignersInputError(f"sentence numbers differ: source snum={ns}, target "
                                     f"snum={nt}", path=tgt_name, line=line)
        yield ms.group(2).split(), mt.group(2).split()


def _read(args):
    if args.input is not None:
        if args.source or args.target:
            raise AlignersInputError("give either -i or -s/-t, not both")
        name = "<stdin>" if args.input == "-" else args.input
        return _snum_aware(read_parallel(args.input, lowercase=args.lowercase), name, name)
    if not (args.source and args.target):
        raise AlignersInputError("give -i FILE ('src ||| tgt') or both -s SRC and -t TGT")
    return _snum_aware(read_parallel(args.source, args.target, lowercase=args.lowercase),
                       args.source, args.target)


def _counted(pairs):
    """`pairs`, and one input error at their end when there were none (every family)."""
    n = 0
    for n, pair in enumerate(pairs, start=1):  # noqa: B007 (n is the count afterwards)
        yield pair
    if n == 0:
        raise AlignersInputError("the input holds no sentence pairs")


def _check_io(args: argparse.Namespace, fam: Family) -> None:
    """Every path, before any work: outputs that are inputs (or each other), unwritable
    places, a --save-model folder that holds the user's files or (without --overwrite) a
    model of another family, a --cache-dir that is a file or cannot be written
    (`aligners.outputs`, the one output rule)."""
    inputs = {"-i": args.input, "-s": args.source, "-t": args.target,
              "--load-model": args.load_model}
    outputs = {"-f": args.forward_links, "-r": args.reverse_links, "-o": args.output}
    check_paths({k: v for k, v in inputs.items() if k != "--load-model"}, outputs)
    check_model_dir(args.save_model, "--save-model", others={**inputs, **outputs},
                    kinds=fam.all_kinds, overwrite=args.overwrite)
    if args.cache_dir:
        check_folder_path(args.cache_dir, flag="--cache-dir")


def run(args: argparse.Namespace) -> int:
    picked = args.device == "auto"  # the device is ours to choose
    args.device, device_why = auto_device(args.device)
    fam, why = _family(args, picked)
    cls = fam.model_class()
    if not cls.USES_TORCH and picked:  # a CPU family: no GPU to pick
        args.device, device_why = "cpu", f"{fam.name} runs on the CPU"
    options = _options_module(fam)
    _refuse_ignored_options(args, fam, why)
    _check_io(args, fam)
    show = not args.quiet and sys.stderr.isatty()
    run_opts = from_options(RunOptions, args, device=args.device, progress=show)
    run_opts.threads = thread_count(run_opts.threads, prog="aligners align")
    if args.load_model:
        model = _load(args.load_model)
        if hasattr(options, "adjust_loaded"):
            options.adjust_loaded(model, args)
    else:  # every value is checked before any work starts
        config = options.from_args(args)
    given = (args.decoding, args.threshold, args.symmetrize)
    _check_decoding(given, cls)
    decoding = cls.decoding_for(model.saved_decoding() if args.load_model else None, *given)
    sync = None
    if cls.USES_TORCH or args.device != "cpu":
        import torch

        if torch_device(args.device).type == "cuda":
            sync = torch.cuda.synchronize  # kernels are charged to the phase that queued them
        if cls.USES_TORCH:
            torch.set_num_threads(run_opts.threads)
    phases = run_opts.phases = Phases(sync=sync)
    pairs = phases.iterate("read", _counted(_read(args)))
    if args.source and not args.lowercase:  # (the HMMs encode the files' bytes directly)
        from aligners.data.file_ids import ParallelFiles

        pairs = ParallelFiles(pairs, args.source, args.target, lambda: phases("read"))
    with phases("train"):  # the families charge "index" (and "train") inside
        if args.load_model:
            aligned = model.decode(pairs, run_opts)
        else:
            model, aligned = cls.fit(pairs, config, run_opts)
    if args.save_model:
        try:
            model.save(args.save_model, decoding)
        except OSError as err:
            raise AlignersInputError(f"--save-model: cannot write the model: {err.strerror}",
                                     path=args.save_model) from None
    dests = {k: v for k, v in (("fwd", args.forward_links), ("rev", args.reverse_links)) if v}
    if args.output is not None or args.symmetrize is not None or not dests:
        dests["sym"] = args.output or "-"
    with phases("decode"):  # lines of a lazy family are charged here as they are written
        lines = aligned.lines(tuple(dests), decoding, posteriors=args.posteriors)
    flags = {"fwd": "-f", "rev": "-r", "sym": "-o"}
    n = 0
    for name, dest in dests.items():
        with phases("write"):
            n = write_lines(dest, phases.iterate("decode", lines[name]), flag=flags[name])
    sec = phases.seconds  # _PHASES first, in their order; then any other, as charged
    order = sorted(sec, key=lambda k: _PHASES.index(k) if k in _PHASES else len(_PHASES))
    took = ", ".join(f"{k} {sec[k]:.1f} s" for k in order)
    args.summary = (f"{n:,} sentence pairs aligned, model {fam.name} ({why}), device "
                    f"{args.device} ({device_why}); {took}; {peak_memory(sync is not None)}")
    return 0


def _family(args: argparse.Namespace, picked: bool = False) -> tuple[Family, str]:
    """(family, why): --model, else the kind saved in --load-model's folder, else the
    `auto` rule (an explicit GPU --device, not `picked` by auto: the HMM, which runs there).
    A --model that contradicts the saved kind is one clear error."""
    if not args.load_model:
        if args.model in (None, "auto"):
            if args.device != "cpu" and not picked:
                return family("hmm", verb="align"), (f"auto: --device {args.device} asked; "
                                                     "the HMM runs there")
            name, why = auto_family(args.device, _count_pairs(args.input or args.source))
            return family(name, verb="align"), why
        return family(args.model, verb="align"), "--model"
    from aligners.export import read_config

    try:
        kind = read_config(args.load_model).get("kind")
        fam = by_kind(kind)
    except AlignersInputError as err:
        raise AlignersInputError(f"--load-model: {err}") from None
    if fam.verb != "align":
        kinds = sorted(k for f in families("align") for k in f.all_kinds)
        raise AlignersInputError(f"--load-model: a {kind!r} model does not word-align; "
                                 f"expected one of {kinds}", path=args.load_model)
    if args.model not in (None, "auto", fam.name):
        raise AlignersInputError(f"--load-model holds a {fam.name} model, not --model "
                                 f"{args.model}", path=args.load_model)
    return fam, "saved model"


def _count_pairs(path: str | None) -> int | None:
    """Lines of a plain input file (for the auto rule), None for stdin or compressed text.
    Cost: one read of the file in 16 MiB blocks (0.1 s at 1.1M lines)."""
    if path is None or not is_plain_file(path):
        return None
    n, last = 0, b"\n"
    with open(path, "rb") as fh:
        while block := fh.read(1 << 24):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


def _load(folder: str):
    """`aligners.load(folder)` (a model of the family `_family` read off the folder), with
    every problem one input error."""
    from safetensors import SafetensorError

    from aligners.export import load

    try:
        return load(folder)
    except AlignersInputError as err:
        raise AlignersInputError(f"--load-model: {err}") from None
    except (KeyError, TypeError, ValueError, SafetensorError) as err:
        raise AlignersInputError(f"--load-model: not a valid saved word aligner ({err!r})",
                                 path=folder) from None
    except OSError as err:
        raise AlignersInputError(f"--load-model: cannot read the model: {err}",
                                 path=folder) from None


