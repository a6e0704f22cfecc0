"""Word alignment vs eflomal on identical data, side by side, on Hansards En-Fr (or a gold set).

    python benchmarks/align_vs_eflomal.py --pairs 200000 --repeats 1
    python benchmarks/align_vs_eflomal.py --dataset wpt-roen        # a gold set, own text
    python benchmarks/align_vs_eflomal.py --suite small --seeds 3   # EM + Bayesian + eflomal
    python benchmarks/align_vs_eflomal.py --suite hansards --pairs 200000 --seeds 3

`--suite` runs ours (EM `aligners align`, and `aligners align --model bayesian` with seeds
0..S-1) and eflomal 2.0.0 (its defaults, all cores: OMP_NUM_THREADS is not set) on every set
named, S runs each (EM is deterministic: one run), and prints per set the mean AER over the
runs for the same symmetrizations (intersect, grow-diag-final-and of the -f/-r links), the
median wall / CPU time and peak RSS, and ours/eflomal ratios. Each set is trained on its own
text (Hansards: N training pairs + test + trial).

The corpus is N training pairs + the test pairs + the trial pairs (unsupervised aligners
train on the text they align). Each repeat runs `eflomal-align` (defaults, both directions)
and `aligners align` (both directions, our default decoding) as subprocesses under
/usr/bin/time, alternating. Both outputs are symmetrized by `aligners.symmetrize` and scored
on the test pairs with `aligners.metrics`. Our decoding is then chosen on the trial pairs
(never the test pairs) from the saved model, without retraining. eflomal (GPL-3.0) must be
installed in the benchmark environment only (`pip install eflomal`); it is never imported.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def timed(cmd: list[str], *, threads: int | None, repo: Path = REPO) -> dict:
    """Run cmd under GNU time -v; wall s, CPU s, peak RSS MB. threads=None: the tool's own
    default (OMP_NUM_THREADS unset: eflomal uses every core). `repo`: the checkout whose
    `aligners` package runs (PYTHONPATH and working folder)."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env["PYTHONPATH"] = str(repo)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True,
                          env=env, cwd=repo)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-4000:])
        raise SystemExit(f"failed: {' '.join(cmd)}")
    err = proc.stderr

    def grab(key):
        return re.search(re.escape(key) + r"\s*(.+)", err).group(1).strip()

    wall = grab("Elapsed (wall clock) time (h:mm:ss or m:ss):")
    parts = [float(x) for x in wall.split(":")]
    wall_s = sum(p * 60 ** k for k, p in enumerate(reversed(parts)))
    cpu = float(grab("User time (seconds):")) + float(grab("System time (seconds):"))
    rss = int(grab("Maximum resident set size (kbytes):")) / 1024
    return {"wall": wall_s, "cpu": cpu, "rss_mb": rss}


def read_links(path: Path) -> list[set[tuple[int, int]]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        links = set()
        for tok in line.split():
            i, j = tok.split(":")[0].split("-")
            links.add((int(i), int(j)))
        out.append(links)
    return out



SMALL = ("pcedt-csen", "wpt-roen", "kftt-jaen", "tsinghua-zhen", "wpt-enhi", "europarl-deen",
         "rwth-deen-europarl")
HEURISTICS = ("intersect", "grow-diag-final-and")
_VENV_EFLOMAL = Path(sys.executable).parent / "eflomal-align"
EFLOMAL = str(_VENV_EFLOMAL) if _VENV_EFLOMAL.exists() else "eflomal-align"


def suite(args) -> None:
    from aligners.data.datasets import iter_parallel, load
    from aligners.metrics import evaluate_alignments
    from aligners.symmetrize import symmetrize_corpus

    names = SMALL if args.suite == "small" else ("hansards-enfr",) if args.suite == "hansards" \
        else tuple(args.suite.split(","))
    results = {}
    for name in names:
        work = Path(args.workdir or tempfile.mkdtemp(prefix="align-bench-")) / name
        work.mkdir(parents=True, exist_ok=True)
        test = load(name, "test")
        trial = load(name, "trial") if name == "hansards-enfr" else []
        train = (list(itertools.islice(iter_parallel(name, "train"), args.pairs))
                 if name == "hansards-enfr" and args.pairs else [])
        src_f, tgt_f = work / "corpus.src", work / "corpus.tgt"
        with open(src_f, "w", encoding="utf-8") as fs, open(tgt_f, "w", encoding="utf-8") as ft:
            for s, t in train + [(p.src, p.tgt) for p in test + trial]:
                fs.write(" ".join(s) + "\n")
                ft.write(" ".join(t) + "\n")
        lo, hi = len(train), len(train) + len(test)
        gold = [p.alignment for p in test]
        wanted = args.systems.split(",")
        if args.baseline:
            wanted.append("base-bayes")
        systems = {k: [] for k in ("eflomal", "ours-bayes", "base-bayes", "ours-em")
                   if k in wanted}
        for seed in range(args.seeds):
            bayes = [sys.executable, "-m", "aligners", "align", "--quiet", "--model",
                     "bayesian", "--seed", str(seed)]
            runs = [("eflomal", [EFLOMAL, "--overwrite"]), ("ours-bayes", bayes),
                    ("base-bayes", bayes)]
            if seed == 0:
                runs.append(("ours-em", [sys.executable, "-m", "aligners", "align", "--quiet",
                                         "--threads", str(args.threads)]))
            for sys_name, cmd in [r for r in runs if r[0] in systems]:
                f, r = work / f"{sys_name}.{seed}.fwd", work / f"{sys_name}.{seed}.rev"
                t = timed([*cmd, "-s", str(src_f), "-t", str(tgt_f), "-f", str(f),
                           "-r", str(r)], threads=None,  # each tool's own default threads
                          repo=Path(args.baseline) if sys_name == "base-bayes" else REPO)
                fl, rl = read_links(f), read_links(r)
                for h in HEURISTICS:
                    links = symmetrize_corpus(fl, rl, h)[lo:hi]
                    t[h] = evaluate_alignments(gold, links, breakdowns=False).micro.aer
                systems[sys_name].append(t)
                print(f"  run {name} {sys_name} seed {seed}: AER {t['intersect']:.4f} / "
                      f"{t['grow-diag-final-and']:.4f}, wall {t['wall']:.1f} s, CPU "
                      f"{t['cpu']:.1f} s, RSS {t['rss_mb']:.0f} MiB", flush=True)
        results[name] = systems
        print(f"== {name}: {len(train)} training + {len(test)} test + {len(trial)} trial "
              f"pairs; {args.seeds} runs (EM: 1, deterministic); {os.cpu_count()} cores")
        print(f"{'system':<11} {'AER inter':>9} {'AER gdfa':>9} {'wall s':>8} {'CPU s':>8} "
              f"{'RSS MiB':>7}")
        med = {}
        for sys_name, rs in systems.items():
            m = {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu", "rss_mb")}
            med[sys_name] = m
            aer = [statistics.mean(r[h] for r in rs) for h in HEURISTICS]
            print(f"{sys_name:<11} {aer[0]:9.4f} {aer[1]:9.4f} {m['wall']:8.1f} "
                  f"{m['cpu']:8.1f} {m['rss_mb']:7.0f}")
        for ours in [k for k in ("ours-bayes", "base-bayes", "ours-em")
                     if k in med and "eflomal" in med]:
            a, e = med[ours], med["eflomal"]
            print(f"ratio {ours}/eflomal: wall {a['wall'] / e['wall']:.2f}x, CPU "
                  f"{a['cpu'] / e['cpu']:.2f}x, RSS {a['rss_mb'] / e['rss_mb']:.2f}x")
        sys.stdout.flush()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="hansards-enfr")
    ap.add_argument("--pairs", type=int, default=200_000, help="Hansards training pairs")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1,
                    help="our torch threads (eflomal runs at its default: every core)")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--suite", default=None,
                    help="small | hansards | comma-separated sets: ours (EM + Bayesian) and "
                         "eflomal side by side, --seeds runs each")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--systems", default="eflomal,ours-bayes,ours-em",
                    help="--suite: comma-separated subset of eflomal, ours-bayes, ours-em")
    ap.add_argument("--baseline", default=None, metavar="CHECKOUT",
                    help="--suite: also run `aligners align --model bayesian` from this other "
                         "checkout (e.g. main's code in a `git archive` folder) as base-bayes, "
                         "in the same loop, for a before/after comparison")
    args = ap.parse_args()
    for tool in ("eflomal-align", "/usr/bin/time"):  # before any temporary folder exists
        if shutil.which(tool) is None:
            ap.exit(2, f"{ap.prog}: error: {tool} not found; install eflomal in the benchmark "
                       "environment (pip install eflomal) and GNU time\n")
    if args.suite:
        return suite(args)

    from aligners.data.bitext import build_index
    from aligners.data.datasets import iter_parallel, load
    from aligners.export import load as load_model
    from aligners.inference.decode import combine, decode_corpus
    from aligners.metrics import evaluate_alignments
    from aligners.training.word_align import choose_decoding

    work = Path(args.workdir or tempfile.mkdtemp(prefix="align-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    test = load(args.dataset, "test")
    trial = load(args.dataset, "trial") if args.dataset == "hansards-enfr" else []
    train = []
    if args.dataset == "hansards-enfr" and args.pairs:
        train = list(itertools.islice(iter_parallel(args.dataset, "train"), args.pairs))
    src_f, tgt_f = work / "corpus.src", work / "corpus.tgt"
    with open(src_f, "w", encoding="utf-8") as fs, open(tgt_f, "w", encoding="utf-8") as ft:
        for s, t in train + [(p.src, p.tgt) for p in test + trial]:
            fs.write(" ".join(s) + "\n")
            ft.write(" ".join(t) + "\n")
    first_test, n_test = len(train), len(test)
    gold = [p.alignment for p in test]

    def test_aer(links):
        return evaluate_alignments(gold, links[first_test:first_test + n_test],
                                   breakdowns=False).micro

    runs = {"eflomal": [], "aligners": []}
    for _ in range(args.repeats):
        runs["eflomal"].append(timed(
            ["eflomal-align", "--overwrite", "-s", str(src_f), "-t", str(tgt_f),
             "-f", str(work / "ef.fwd"), "-r", str(work / "ef.rev")], threads=None))
        runs["aligners"].append(timed(
            [sys.executable, "-m", "aligners", "align", "--quiet", "-s", str(src_f),
             "-t", str(tgt_f), "-f", str(work / "al.fwd"), "-r", str(work / "al.rev"),
             "-o", str(work / "al.sym"), "--symmetrize", "none",
             "--threads", str(args.threads), "--save-model", str(work / "model")], threads=1))
    from aligners.symmetrize import symmetrize_corpus

    rows = []
    ef_f, ef_r = read_links(work / "ef.fwd"), read_links(work / "ef.rev")
    for h in ("intersect", "grow-diag-final-and"):
        rows.append(("eflomal", h, test_aer(symmetrize_corpus(ef_f, ef_r, h))))
    rows.append(("aligners", "agreement (default)", test_aer(read_links(work / "al.sym"))))
    chosen = None
    if trial:
        saved = load_model(work / "model")
        model, sids, tids = saved.model, saved.src_ids, saved.tgt_ids
        grid = {"methods": ["agreement", "posterior", "viterbi"],
                "thresholds": [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5],
                "heuristics": ["intersect", "grow-diag", "grow-diag-final-and"]}
        chosen, trial_aer = choose_decoding(model, sids, tids, trial, grid)
        index = build_index([(p.src, p.tgt) for p in test], sids, tids, keys=model.keys)
        dec = decode_corpus(model, index, method=chosen["method"],
                            threshold=chosen["threshold"])
        links = combine(dec, chosen["symmetrize"])
        s = evaluate_alignments(gold, links, breakdowns=False).micro
        rows.append(("aligners", f"trial-chosen {chosen} (trial AER {trial_aer:.4f})", s))
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("wall", "cpu", "rss_mb")}
           for k, v in runs.items()}
    print(f"data: {args.dataset}, {len(train)} training + {n_test} test + {len(trial)} trial "
          f"pairs; {args.repeats} repeat(s), medians; {os.cpu_count()} CPU cores, no GPU")
    print(f"{'system':<10} {'decoding':<40} {'prec':>6} {'rec':>6} {'AER':>7}")
    for name, dec, s in rows:
        print(f"{name:<10} {dec[:40]:<40} {s.precision:6.4f} {s.recall:6.4f} {s.aer:7.4f}")
    print(f"{'system':<10} {'wall s':>8} {'CPU s':>8} {'RSS MB':>8}")
    for k, v in med.items():
        print(f"{k:<10} {v['wall']:8.1f} {v['cpu']:8.1f} {v['rss_mb']:8.0f}")
    a, e = med["aligners"], med["eflomal"]
    print(f"ratio aligners/eflomal: wall {a['wall'] / e['wall']:.2f}x, "
          f"CPU {a['cpu'] / e['cpu']:.2f}x, RSS {a['rss_mb'] / e['rss_mb']:.2f}x")
    if chosen is not None:
        print(f"full chosen decoding: {chosen}")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"runs": runs, "medians": med, "chosen": chosen,
             "aer": {f"{n} {d}": s.aer for n, d, s in rows}}, indent=2, default=str))


if __name__ == "__main__":
    main()
