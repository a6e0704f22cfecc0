"""Word alignment side by side with eflomal: `aligners align` with no flags (the default),
each word family (hmm, bayesian, gappy-hsmm) and eflomal 2.0.0 on the same text, scored on the
gold test pairs; rows -> results/word.json.

    python benchmarks/align_vs_eflomal.py --suite hansards-200k   # all five systems
    python benchmarks/align_vs_eflomal.py --suite small --seeds 3 # the 7 small gold sets
    python benchmarks/align_vs_eflomal.py --suite pcedt-csen --systems hmm,eflomal
    python benchmarks/align_vs_eflomal.py --suite hansards-20k --systems hmm,gappy-hsmm --no-save

Suites: a registry gold set (pcedt-csen, wpt-roen, kftt-jaen, tsinghua-zhen, wpt-enhi,
europarl-deen, rwth-deen-europarl), `small` (all seven), `hansards-N` (N = 1k, 20k, 200k, full
or a number: the first N Hansards training pairs + the 447 test + 37 trial pairs; full = the
1,130,104-pair WPT training set), comma-separated. Unsupervised aligners train on the text
they align: a gold set without a bitext is trained on its own text only. `--pairs N` with
`--suite hansards` (the default) is `hansards-N`.

Each tool runs as a child of this process (the harness: wall, CPU of the child's tree, peak
RSS), tools alternating: per seed eflomal (its defaults, OMP_NUM_THREADS unset: every core),
`aligners align --seed S` (the default: what a user gets without flags) and `aligners align
--model bayesian --seed S`; once (deterministic) `--model hmm` (`--threads` torch threads) and
`--model gappy-hsmm`. Every system of ours is scored on its default output (-o); the samplers'
(and the default's) directions (-f/-r) are also symmetrized by `aligners.symmetrize` (intersect,
grow-diag-final-and: eflomal's "aer" is its grow-diag-final-and, the better of the two is
the one to beat). AER = `aligners.metrics` on the test pairs; a row holds the
mean AER of its runs and the median time and RSS, and ours/eflomal time ratios. eflomal
(GPL-3.0) is installed in the benchmark environment only (`pip install -e .[bench]`), never
imported.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, add_output_args, machine, make_row, run_command, write_rows  # noqa: E402

sys.path.insert(0, str(ROOT))

__all__ = ["SMALL", "SYSTEMS", "main", "parse_suites"]

SMALL = ("pcedt-csen", "wpt-roen", "kftt-jaen", "tsinghua-zhen", "wpt-enhi", "europarl-deen",
         "rwth-deen-europarl")
SYSTEMS = ("default", "hmm", "gappy-hsmm", "bayesian", "eflomal")
_ALIASES = {"ours-em": "hmm", "ours-bayes": "bayesian"}  # the names of earlier runs
_HEADLINE = {("hansards-200k", "hmm"), ("hansards-200k", "bayesian")}
_VENV_EFLOMAL = Path(sys.executable).parent / "eflomal-align"
# $ALIGNERS_EFLOMAL names the eflomal-align to run (else the venv's, else the PATH's)
EFLOMAL = os.environ.get("ALIGNERS_EFLOMAL") or (str(_VENV_EFLOMAL) if _VENV_EFLOMAL.exists()
                                                 else "eflomal-align")


def _hansards_pairs(text: str) -> int | None:
    """'20k' -> 20000, '1m' -> 1000000, 'full' -> None (all), '5000' -> 5000."""
    if text == "full":
        return None
    scale = {"k": 1000, "m": 1000000}.get(text[-1:].lower(), 1)
    return int(text[:-1] if scale > 1 else text) * scale


def parse_suites(spec: str, pairs: int) -> list[tuple[str, int | None]]:
    """[(suite name, Hansards training pairs or None)]; a bad name is a ValueError."""
    out = []
    for name in spec.split(","):
        name = name.strip()
        if name == "small":
            out += [(n, 0) for n in SMALL]
        elif name == "hansards":
            out.append((f"hansards-{pairs // 1000}k" if pairs % 1000 == 0 else
                        f"hansards-{pairs}", pairs))
        elif name.startswith("hansards-"):
            out.append((name, _hansards_pairs(name[len("hansards-"):])))
        elif name in SMALL:
            out.append((name, 0))
        else:
            raise ValueError(f"unknown suite {name!r}: {', '.join(SMALL)}, small, hansards-N")
    return out


def _corpus(name: str, pairs: int | None, work: Path):
    """Write work/corpus.{src,tgt}; return (gold of the test pairs, first test line)."""
    from aligners.data.datasets import iter_parallel, load

    data = "hansards-enfr" if name.startswith("hansards") else name
    test = load(data, "test")
    trial = load(data, "trial") if data == "hansards-enfr" else []
    if data != "hansards-enfr":
        train = []
    elif pairs is None:  # the full WPT training set
        from aligners.data.parallel import read_parallel
        from aligners.data.paths import data_root

        d = data_root() / "hansards-enfr-naacl2003" / "train"
        train = read_parallel(d / "hansards.train.e.gz", d / "hansards.train.f.gz")
    else:
        train = itertools.islice(iter_parallel(data, "train"), pairs)
    n = 0
    with open(work / "corpus.src", "w", encoding="utf-8") as fs, \
            open(work / "corpus.tgt", "w", encoding="utf-8") as ft:
        for s, t in train:
            fs.write(" ".join(s) + "\n")
            ft.write(" ".join(t) + "\n")
            n += 1
        for p in test + trial:
            fs.write(" ".join(p.src) + "\n")
            ft.write(" ".join(p.tgt) + "\n")
    return [p.alignment for p in test], n


def _links(path: Path, first: int, n: int) -> list[set]:
    """The links of lines first .. first + n - 1 (the test pairs) of an output file."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in itertools.islice(fh, first, first + n):
            out.append({tuple(int(x) for x in tok.split(":")[0].split("-"))
                        for tok in line.split()})
    return out


def _commands(system: str, seed: int, work: Path, threads: int, *,
              cache: bool = False) -> list[str] | None:
    """The command of one run (None: a deterministic system after its first run). `cache`:
    the EM families keep their pair index on disk (`--cache-dir`, the full Hansards set:
    peak RSS <= 4 GB)."""
    io = ["-s", str(work / "corpus.src"), "-t", str(work / "corpus.tgt")]
    pairs = ["-f", str(work / f"{system}.{seed}.fwd"), "-r", str(work / f"{system}.{seed}.rev")]
    ours = [sys.executable, "-m", "aligners", "align", "--quiet", *io]
    if system == "eflomal":
        return [EFLOMAL, "--overwrite", *io, *pairs]
    out = ["-o", str(work / f"{system}.{seed}.out")]
    if system in ("default", "bayesian"):
        model = [] if system == "default" else ["--model", "bayesian"]
        return [*ours, *model, "--seed", str(seed), *pairs, *out]
    if seed > 0:
        return None
    return [*ours, "--model", system, "--threads", str(threads), *out,
            *(["--cache-dir", str(work / f"{system}.cache")] if cache else [])]


def _score(system: str, seed: int, work: Path, gold, first: int, *,
           hansards: bool = False) -> dict:
    """AER of the system's default output (eflomal: grow-diag-final-and) on the test pairs,
    and for the samplers their directions' intersection and grow-diag-final-and; on Hansards
    also on the 347 test pairs of Bansal et al. (the first 100 are their dev)."""
    from aligners.metrics import evaluate_alignments
    from aligners.symmetrize import symmetrize_corpus

    def aer(links, lo=0):  # links of the test pairs only
        return evaluate_alignments(gold[lo:], links[lo:], breakdowns=False).micro

    def with_347(row: dict, links, key: str) -> dict:
        if hansards:
            s = aer(links, 100)
            row[key] = s.aer
            if key == "aer_347":
                row["f1_347"] = s.f1
        return row

    row = {}
    if system != "eflomal":
        links = _links(work / f"{system}.{seed}.out", first, len(gold))
        s = aer(links)
        row = with_347({"aer": s.aer, "precision": s.precision, "recall": s.recall}, links,
                       "aer_347")
    if system not in ("default", "bayesian", "eflomal"):
        return row
    f = _links(work / f"{system}.{seed}.fwd", first, len(gold))
    r = _links(work / f"{system}.{seed}.rev", first, len(gold))
    inter_links = symmetrize_corpus(f, r, "intersect")
    gdfa_links = symmetrize_corpus(f, r, "grow-diag-final-and")
    row.update({"aer_intersect": aer(inter_links).aer, "aer_gdfa": aer(gdfa_links).aer})
    row.setdefault("aer", row["aer_gdfa"])
    with_347(row, gdfa_links, "aer_347_gdfa")
    return with_347(row, inter_links, "aer_347_intersect")


def _system_name(system: str) -> str:
    if system != "eflomal":
        return f"aligners {system}"
    try:
        from importlib.metadata import version

        return f"eflomal {version('eflomal')}"
    except Exception:  # noqa: BLE001 - the package may sit in another environment
        return "eflomal"


def run_suite(name: str, pairs: int | None, args, work: Path) -> list[dict]:
    """Every system on one suite: the result rows."""
    work.mkdir(parents=True, exist_ok=True)
    gold, first = _corpus(name, pairs, work)
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    runs = {s: [] for s in args.systems}
    for seed in range(args.seeds):
        for system in args.systems if seed % 2 == 0 else args.systems[::-1]:
            cmd = _commands(system, seed, work, args.threads,
                            cache=name.startswith("hansards") and pairs is None)
            if cmd is None:
                continue
            res = run_command(cmd, env=env)
            if res["returncode"] != 0:
                raise SystemExit(f"{system} failed on {name}:\n{res['stderr']}")
            res.update(_score(system, seed, work, gold, first,
                                hansards=name.startswith("hansards")))
            runs[system].append(res)
            print(f"  {name} {system} seed {seed}: AER {res['aer']:.4f}, wall "
                  f"{res['wall_s']:.1f} s, CPU {res['cpu_s']:.1f} s, RSS "
                  f"{res['peak_rss_mib']:.0f} MiB", flush=True)
    med = {s: {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "cpu_s",
                                                                   "peak_rss_mib")}
           for s, rs in runs.items()}
    desc = machine() + f"; ours {args.threads} torch thread(s) (samplers: 2), eflomal all cores"
    peer = _system_name("eflomal") if "eflomal" in runs else None
    rows = []
    for system, rs in runs.items():
        metrics = {k: round(statistics.mean(r[k] for r in rs), 4)
                   for k in rs[0] if k.startswith(("aer", "precision", "recall", "f1"))}
        if len(rs) > 1:
            metrics["aer_sd"] = round(statistics.stdev(r["aer"] for r in rs), 4)
        mine = peer is not None and system != "eflomal"
        if mine:
            metrics["wall_ratio"] = round(med[system]["wall_s"] / med["eflomal"]["wall_s"], 2)
            metrics["cpu_ratio"] = round(med[system]["cpu_s"] / med["eflomal"]["cpu_s"], 2)
        rows.append(make_row(
            "word", name, _system_name(system), metrics=metrics,
            role="peer" if system == "eflomal" else "ours", **med[system],
            peer=peer if mine else None, headline=(name, system) in _HEADLINE,
            machine_desc=desc, note=f"{len(rs)} run(s): mean AER, median time and RSS"
            + ("" if first else "; trained on the gold set's own text only")))
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="hansards",
                    help="comma-separated: a gold set, small, hansards-N (default: hansards "
                         "with --pairs)")
    ap.add_argument("--dataset", default=None, help="one suite (same as --suite NAME)")
    ap.add_argument("--pairs", type=int, default=200_000,
                    help="Hansards training pairs for --suite hansards (default 200000)")
    ap.add_argument("--seeds", type=int, default=3,
                    help="runs of each sampler (bayesian seeds 0..S-1, eflomal S runs)")
    ap.add_argument("--systems", default=",".join(SYSTEMS),
                    help=f"comma-separated subset of {', '.join(SYSTEMS)}")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of hmm / gappy-hsmm")
    ap.add_argument("--workdir", type=Path, default=None,
                    help="keep the corpora and outputs here (default: a temporary folder)")
    add_output_args(ap, "word")
    args = ap.parse_args(argv)
    args.systems = [_ALIASES.get(s, s) for s in args.systems.split(",")]
    bad = [s for s in args.systems if s not in SYSTEMS]
    try:
        suites = parse_suites(args.dataset or args.suite, args.pairs)
        if bad:
            raise ValueError(f"unknown system(s) {', '.join(bad)}: {', '.join(SYSTEMS)}")
    except ValueError as err:
        ap.error(str(err))
    if "eflomal" in args.systems and shutil.which(EFLOMAL) is None:  # before any folder exists
        ap.exit(2, f"{ap.prog}: error: eflomal-align not found; install eflomal in the "
                   "benchmark environment (pip install -e .[bench]) or leave it out of "
                   "--systems\n")
    rows = []
    with tempfile.TemporaryDirectory(prefix="align-bench-") as tmp:
        for name, pairs in suites:
            rows += run_suite(name, pairs, args, (args.workdir or Path(tmp)) / name)
    for r in rows:
        print(f"{r['dataset']:<20} {r['system']:<22} {r['metrics']}  wall {r['wall_s']} s, "
              f"CPU {r['cpu_s']} s, RSS {r['peak_rss_mib']} MiB")
    if not args.no_save:
        print(f"wrote {write_rows('word', rows, args.results)}")


if __name__ == "__main__":
    main()
