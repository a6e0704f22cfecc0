"""RESULTS.md (and the marked blocks of README.md) from the benchmark result rows.

    python benchmarks/report.py            # rewrite RESULTS.md and README.md's blocks
    python benchmarks/report.py --check    # exit 1 if either is out of date, write nothing
    python benchmarks/report.py --rerun [--dry-run] [--stale] [--match TEXT] [--limit-min 30]
                                           # re-run the rows' commands first (rerun.py)

Reads every ``benchmarks/results/*.json`` (rows with the keys of ``harness.FIELDS``; a bad
row or an unknown task stops it with one line naming the file and row, exit 2) and writes one
section per entry of ``SECTIONS``, one table per ``Table``:

- Columns: dataset, system, the table's metrics, wall and CPU time, peak RSS (and GPU memory),
  "vs peer" (ours / the peer's wall and CPU time, or the row's own ``wall_ratio`` /
  ``cpu_ratio`` metrics), and a reference number. A column that no row fills is left out;
  a missing value in a shown column is "—". Numbers are printed exactly as stored.
- Row order: grouped by dataset in the table's ``datasets`` order (others after it, in
  alphabetical order); inside a group ours, then peers, then paper figures; inside a role the
  table's ``systems`` order (others after, alphabetically).
- Under each table, one line per reference: the command that reproduces the rows, the
  machine, when and at which commit they were measured, where they come from, and notes.

README.md blocks ``<!-- results:NAME -->...<!-- /results:NAME -->`` are refilled:
``which-model`` (the word families' AER and time per data set, and the command that measures
the row: ``WHICH_COMMAND``) and, for a task name, that
task's rows marked ``headline`` (one line each, with its command); ``TASK@TEXT``: only those
whose system contains TEXT.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROLES, ResultsError, load_rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["DATASETS", "SECTIONS", "Column", "Section", "Table", "WHICH_MODEL", "main",
           "read_results", "refresh_blocks", "render_block", "render_results"]


@dataclass(frozen=True)
class Column:
    """A metric column: the metrics key, its header, and (where every source gives that many)
    a fixed number of decimals; None: the stored number as it is."""

    key: str
    label: str
    digits: int | None = None


@dataclass(frozen=True)
class Table:
    """One table: the rows of `task`; metric columns; times shown in `unit` (s or ms)."""

    task: str
    title: str
    columns: tuple
    unit: str = "s"
    datasets: tuple = ()
    systems: tuple = ()
    only: bool = False  # True: the rows of `datasets` alone (a closer look at a few)


@dataclass(frozen=True)
class Section:
    title: str
    intro: str
    tables: tuple = field(default_factory=tuple)


# Display names of the data sets (ids are the benchmark scripts' names; others show as is).
DATASETS = {
    "hansards-1k": "Hansards En-Fr 1k", "hansards-20k": "Hansards En-Fr 20k (+ test, trial)",
    "hansards-200k": "Hansards En-Fr 200k (+ test, trial)",
    "hansards-200k-test": "Hansards En-Fr 200k (+ test)",
    "hansards-200k-x5": "Hansards 200k x 5 (1M pairs)",
    "hansards-full": "Hansards En-Fr full (1.13M)", "rwth-deen-europarl": "RWTH De-En (508)",
    "wpt-roen": "WPT Ro-En (248)", "pcedt-csen": "PCEDT Cs-En (515)",
    "kftt-jaen": "KFTT Ja-En (582)", "tsinghua-zhen": "Tsinghua Zh-En (450)",
    "wpt-enhi": "WPT En-Hi (90)", "europarl-deen": "Europarl De-En, Bicici (100)",
    "msr06": "MSR06", "msr06p": "MSR06P", "edbpp": "EDB++", "edbppp": "EDB++P",
    "multimwa-wiki": "MultiMWA Wiki", "multimwa-newsela": "MultiMWA Newsela (out of domain)",
    "multimwa-arxiv": "MultiMWA arXiv (out of domain)",
    "news-translit-enhe": "NEWS 2012 En-He transliteration", "msrp": "MSRP paraphrase",
    "rte5": "RTE-5 entailment",
}
_WORD_ORDER = ("hansards-1k", "hansards-20k", "hansards-200k", "hansards-200k-x5",
               "hansards-full", "rwth-deen-europarl", "wpt-roen", "pcedt-csen", "kftt-jaen",
               "tsinghua-zhen", "wpt-enhi", "europarl-deen")
_WORD_SYSTEMS = ("aligners default", "aligners hmm", "aligners gappy-hsmm", "aligners bayesian")
_AER = (Column("aer", "AER", 4), Column("aer_sd", "sd", 4), Column("aer_intersect", "AER ∩", 4),
        Column("aer_gdfa", "AER gdfa", 4), Column("precision", "P", 4),
        Column("recall", "R", 4))
_LATTICES = ("linear chain B32 N40 C40", "semi-Markov B16 N30 K3 C30",
             "semi-Markov B16 N30 K8 C30", "linear chain B256 N100 C64",
             "semi-Markov B64 N60 K8 C30", "alignment HMM B64 I=J=40 C80",
             "factored HMM posteriors B512 N40 C80")
_MONO_YAO = (Column("macro_f1", "macro F1"), Column("micro_f1", "micro F1"),
             Column("nonident_f1_macro", "non-ident. F1 (macro)", 1),
             Column("exact", "E %", 1))
_MONO_MWA = (Column("micro_f1", "micro F1", 2), Column("macro_f1", "macro F1", 2),
             Column("nonident_f1_micro", "non-ident. F1 (micro)", 1),
             Column("exact", "E %", 1))

SECTIONS = (
    Section("Word alignment vs eflomal", (
        "Each system trains on the text it aligns (Hansards: N training pairs + the 447 test + "
        "37 trial pairs) and is scored on the gold test pairs by `aligners.metrics`; eflomal's "
        "and the Bayesian aligner's two directions are symmetrized by `aligners.symmetrize`. "
        "AER = each system's default output (`default`: `aligners align` with no flags; "
        "`hmm`, `gappy-hsmm` agreement decoding; `bayesian` since this round the mean of its "
        "directions' marginals, earlier rows grow-diag-final-and) and eflomal's "
        "grow-diag-final-and; AER ∩ / gdfa: the samplers' directions intersected / "
        "grow-diag-final-and. eflomal 2.0.0 runs at its defaults on every core; samplers: "
        "mean AER over the runs, sd over seeds. "
        "The small gold sets ship no bitext: every system trains on the set's own text only."),
        (Table("word", "", _AER, datasets=_WORD_ORDER, systems=_WORD_SYSTEMS),
         Table("word", "The literature's Hansards table: the full training set", (
             Column("aer_347", "AER 347", 4), Column("f1_347", "F1 347", 4),
             Column("aer_347_intersect", "AER 347 ∩", 4), Column("aer", "AER 447", 4),
             Column("aer_intersect", "AER 447 ∩", 4)),
             datasets=("hansards-full",), systems=_WORD_SYSTEMS, only=True),
         Table("bitext-speed", "The bitext path on this box: `python benchmarks/bitext_speed.py`"
               " (`aligners align --model hmm`, 1 + 1 EM iterations, CPU; seconds per phase)",
               (Column("read_s", "read"), Column("index_s", "index"),
                Column("train_s", "train"), Column("decode_s", "decode"),
                Column("write_s", "write"), Column("identical", "output = base (1 = yes)")),
               datasets=("hansards-200k-test",)))),
    Section("Phrasal and gappy HSMM vs Bansal, Quirk & Moore (2011)", (
        "`python train.py experiment=bansal2011_hansards[_20k]`: the paper's Table 1 shape on "
        "Hansards (lowercased). Test = the 347 test pairs after the paper's dev split (37 "
        "trial + first 100 test pairs, where the decoding is chosen); AER 447 = all test "
        "pairs, decoding chosen on the 37 trial pairs. CPU s per model (the phrasal rows: the "
        "model alone, after its no-agreement start)."),
        (Table("phrasal", "", (Column("precision", "P", 4), Column("recall", "R", 4),
                               Column("f1", "F1", 4), Column("aer", "AER", 4),
                               Column("aer_447", "AER 447", 4),
                               Column("dev_aer", "dev AER", 4),
                               Column("gappy_right", "gappy right /33"),
                               Column("pipeline_vs_word", "pipeline / word CPU", 2)),
               datasets=("hansards-200k", "hansards-20k"),
               systems=("word HMM by agreement", "+ contiguous phrases", "+ gappy phrases",
                        "whole task")),)),
    Section("Lattices vs torch-struct (CPU)", (
        "Log Z forward + backward (the gradient = the marginals), float32, one thread, same "
        "inputs; median of repeats, ours and torch-struct interleaved in one process; peak = "
        "growth of the resident high-water mark in a fresh process per implementation."),
        (Table("lattices", "", (Column("speedup", "torch-struct time / ours"),
                                Column("memory_ratio", "memory ours / torch-struct"),
                                Column("logz_diff", "max |Δ log Z|")), unit="ms",
               datasets=_LATTICES, systems=("ours", "torch-struct")),)),
    Section("Monolingual alignment vs Yao et al. (2013) and jacana", (
        "Test splits; macro = jacana's per-pair averaging (the paper's), micro = pooled; "
        "non-ident. = links between different words; E = exact match. Neural models and "
        "decodings were chosen on dev or on 100 held-out training pairs, never on test."),
        (Table("mono-yao", "Yao et al. sets (test)", _MONO_YAO,
               datasets=("msr06", "msr06p", "edbpp", "edbppp"),
               systems=("token CRF", "phrase CRF", "neural semi-CRF",
                        "jacana-token (Yao et al.)", "jacana-phrase (Yao et al.)")),
         Table("mono-multimwa", "MultiMWA (trained on Wiki)", _MONO_MWA,
               datasets=("multimwa-wiki", "multimwa-newsela", "multimwa-arxiv"),
                  systems=("token CRF", "neural ensemble (4 models)",
                        "neural ensemble, threshold 0.4", "neural fast (3 layers)")),
         Table("mono-speed", "Decoding speed (pairs/s, features included)",
               (Column("pairs_per_s_cold", "pairs/s cold"),
                Column("pairs_per_s_warm", "pairs/s warm")), datasets=("msr06", "multimwa-wiki"),
               systems=("token CRF", "phrase CRF", "neural s2t, 6 layers", "neural s2t, 3 layers",
                        "neural both directions, posterior (6 layers)",
                        "neural fast (3 layers, intersect)")))),
    Section("LCLR vs Chang et al. (2010)", (
        "Two-stage = Alignment + Learning with the same features; C chosen by cross-"
        "validation on the training split. The ILP table: the paraphrase ILP on 400 MSRP "
        "test pairs, one process."),
        (Table("lclr", "", (Column("accuracy", "Acc %"), Column("accuracy_sd", "± sd"),
                            Column("mrr", "MRR %"), Column("mrr_sd", "± sd")),
               datasets=("news-translit-enhe", "msrp", "rte5"),
               systems=("two-stage", "LCLR")),
         Table("lclr-ilp", "ILP inference", (Column("pairs_per_s_wall", "pairs/s wall"),
                                             Column("pairs_per_s_cpu", "pairs/s CPU"),
                                             Column("integral", "LP integral %"))))),
    Section("Phrase reordering vs Alrajeh & Niranjan (2014)", (
        "Hansards En-Fr, eflomal gdfa links, Moses `wbe-msd-backward` orientations; the last "
        "10% of the pairs held out; error = held-out orientation error over phrase-pair "
        "occurrences; train time of the model alone."),
        (Table("reorder", "", (Column("error", "error %", 2), Column("size_mb", "size MB"),
                               Column("dual_vs_primal", "dual / primal time", 2)),
               datasets=("hansards-20k", "hansards-200k"),
               systems=("majority class", "lexicalized (Moses)", "naive Bayes MAP",
                        "naive Bayes MAP, half the features", "primal MLR",
                        "dual MLR eps 0.1", "whole experiment")),)),
    Section("GPU", (
        "`bash benchmarks/gpu_session.sh OUT` (= `python benchmarks/gpu.py --device cuda` case "
        "by case). Compare only rows of one reference: each call got another machine. "
        "Memory: `torch.cuda.max_memory_allocated` growth (GPU MiB) or resident set (CPU)."),
        (Table("gpu-lattices", "Lattices vs torch-struct", (
            Column("speedup", "torch-struct time / ours"),
            Column("memory_ratio", "memory ours / torch-struct")), unit="ms",
            datasets=_LATTICES, systems=("ours (auto: graph)", "torch-struct")),
         Table("gpu-models", "Models", (Column("aer", "AER", 4), Column("micro_f1", "micro F1"),
                                        Column("macro_f1", "macro F1"))))),
)
TASKS: dict = {}  # task -> its first (main) table
for _table in (t for s in SECTIONS for t in s.tables):
    TASKS.setdefault(_table.task, _table)

# "Which model for my data": rows = data sets, columns = systems (task "word").
WHICH_MODEL = (
    ("Hansards En-Fr 1k", "hansards-1k"), ("Hansards En-Fr 20k", "hansards-20k"),
    ("Hansards En-Fr 200k", "hansards-200k"), ("Hansards En-Fr full (1.13M)", "hansards-full"),
    ("RWTH De-En", "rwth-deen-europarl"), ("WPT Ro-En", "wpt-roen"),
    ("PCEDT Cs-En", "pcedt-csen"), ("KFTT Ja-En", "kftt-jaen"),
    ("Tsinghua Zh-En", "tsinghua-zhen"), ("WPT En-Hi", "wpt-enhi"))
WHICH_SYSTEMS = (("default", "aligners default"), ("hmm", "aligners hmm"),
                 ("gappy-hsmm", "aligners gappy-hsmm"), ("bayesian", "aligners bayesian"),
                 ("eflomal", "eflomal 2.0.0"))
WHICH_COMMAND = "python benchmarks/align_vs_eflomal.py --suite {}"  # the data set ids are suites
DASH = "—"


def show(x, unit: str = "s", digits: int | None = None) -> str:
    """A stored number as stored: ints as ints, floats by their shortest repr (so 75.0 stays
    75.0), seconds in ms for unit "ms"; with `digits`, that many decimals (a column whose
    sources all give that many)."""
    if x is None:
        return DASH
    if digits is not None:
        return f"{x:.{digits}f}"
    if unit == "ms":
        return format(Decimal(repr(x)).scaleb(3).normalize(), "f")
    return repr(x)


def _label(dataset: str) -> str:
    return DATASETS.get(dataset, dataset)


def read_results(results_dir: Path) -> list[dict]:
    """Every row of results_dir/*.json, checked; unknown tasks and duplicate (task, dataset,
    system) keys are ResultsErrors naming the file and row."""
    rows, seen = [], {}
    for path in sorted(Path(results_dir).glob("*.json")):
        for i, row in enumerate(load_rows(path)):
            where = f"{path} row {i + 1}"
            if row["task"] not in TASKS:
                raise ResultsError(f"{where}: unknown task {row['task']!r} (known: "
                                   f"{', '.join(TASKS)})")
            key = (row["task"], row["dataset"], row["system"])
            if key in seen:
                raise ResultsError(f"{where}: duplicate of {seen[key]} ({' / '.join(key)})")
            seen[key] = where
            rows.append(row)
    return rows


def _order(table: Table, rows: list[dict]) -> list[dict]:
    def rank(order, value):
        return (order.index(value), "") if value in order else (len(order), value)

    return sorted(rows, key=lambda r: (rank(table.datasets, r["dataset"]),
                                       ROLES.index(r["role"]),
                                       rank(table.systems, r["system"])))


def _peer(rows: list[dict], row: dict) -> dict | None:
    if row["peer"] is None:
        return None
    for r in rows:
        if (r["task"], r["dataset"], r["system"]) == (row["task"], row["dataset"], row["peer"]):
            return r
    raise ResultsError(f"{row['task']}/{row['dataset']}/{row['system']}: peer "
                       f"{row['peer']!r} has no row in the same task and data set")


def _ratio(row: dict, peer: dict | None, key: str, metric: str) -> str:
    if metric in row["metrics"]:
        return f"{row['metrics'][metric]:.2f}x"
    if peer is None or row[key] is None or not peer[key]:
        return DASH
    return f"{row[key] / peer[key]:.2f}x"


def _vs_peer(row: dict, peer: dict | None) -> tuple[str, str, str] | None:
    """(peer name, wall ratio, CPU ratio) as shown, or None for a row without a peer."""
    if peer is None and "wall_ratio" not in row["metrics"] and "cpu_ratio" not in row["metrics"]:
        return None
    name = peer["system"] if peer else row["peer"] or "peer"
    return (name, _ratio(row, peer, "wall_s", "wall_ratio"),
            _ratio(row, peer, "cpu_s", "cpu_ratio"))


def _vs_cell(row: dict, rows: list[dict]) -> str:
    vs = _vs_peer(row, _peer(rows, row))
    return DASH if vs is None else f"{vs[1]} / {vs[2]} {vs[0]}"


def _table_lines(table: Table, rows: list[dict], refs: dict) -> list[str]:
    u = table.unit
    cols = [(c.label, lambda r, c=c: show(r["metrics"].get(c.key), digits=c.digits))
            for c in table.columns]
    cols += [(f"wall {u}", lambda r: show(r["wall_s"], u)),
             (f"CPU {u}", lambda r: show(r["cpu_s"], u)),
             ("RSS MiB", lambda r: show(r["peak_rss_mib"])),
             ("GPU MiB", lambda r: show(r["cuda_peak_mib"])),
             ("vs peer (wall / CPU)", lambda r: _vs_cell(r, rows))]
    cols = [c for c in cols if any(c[1](r) != DASH for r in rows)]
    head = ["data", "system", *(c[0] for c in cols), "ref"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in _order(table, rows):
        key = (r["command"], r["machine"], r["measured"], r["source"], r["note"])
        refs.setdefault(key, len(refs) + 1)
        mark = " †" if (r["note"] or "").startswith("† ") else ""  # benchmarks/stale.py
        cells = [_label(r["dataset"]), r["system"] + (" (paper)" if r["role"] == "paper"
                                                      else "") + mark,
                 *(c[1](r) for c in cols), f"[{refs[key]}]"]
        out.append("| " + " | ".join(cells) + " |")
    return out


def _ref_lines(refs: dict) -> list[str]:
    out = []
    for (command, mach, measured, source, note), n in refs.items():
        line = f"- [{n}] `{command}` · {mach} · measured {measured} ({source})"
        out.append(line + (f". {note}" if note else ""))
    return out


def render_results(rows: list[dict]) -> str:
    """The whole RESULTS.md text."""
    out = ["# Results", "",
           "Generated by `python benchmarks/report.py` from `benchmarks/results/*.json` (written "
           "by the scripts in `benchmarks/`): do not edit by hand. Current figures only; how "
           "they were reached is in the git history: a source \"BENCHMARKS.md § X\" is "
           "section X of the former work log (`git show COMMIT:BENCHMARKS.md`, COMMIT = the "
           "row's \"recorded in\" commit). Times are wall clock and process CPU; \"vs peer\" "
           "is ours / the peer's time in the same run. [n] names the command that reproduces "
           "a row, the machine and the provenance (list under each table); † = stale: the "
           "family's code changed after the row was measured (`python benchmarks/stale.py`), "
           "re-run its command for a current figure; "
           "docs/benchmarks.md describes the suite.",
           ""]
    for sec in SECTIONS:
        out += [f"## {sec.title}", "", sec.intro, ""]
        for table in sec.tables:
            mine = [r for r in rows if r["task"] == table.task
                    and (not table.only or r["dataset"] in table.datasets)]
            if table.title:
                out += [f"### {table.title}", ""]
            if not mine:
                out += ["(no rows yet)", ""]
                continue
            refs: dict = {}
            out += _table_lines(table, mine, refs) + [""] + _ref_lines(refs) + [""]
    return "\n".join(out).rstrip("\n") + "\n"


def _time_cell(row: dict) -> str:
    if row["wall_s"] is not None:
        return f"{show(row['wall_s'])} s"
    if row["cpu_s"] is not None:
        return f"{show(row['cpu_s'])} s CPU"
    return ""


def _which_model(rows: list[dict]) -> str:
    word = {(r["dataset"], r["system"]): r for r in rows if r["task"] == "word"}
    head = ["data", *(f"{name} AER · time" for name, _ in WHICH_SYSTEMS[:-1]),
            f"{WHICH_SYSTEMS[-1][0]} AER (better of ∩, gdfa) · time", "command"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, ds in WHICH_MODEL:
        cells = []
        for _, system in WHICH_SYSTEMS:
            r = word.get((ds, system))
            if r is None or "aer" not in r["metrics"]:
                cells.append(DASH)
                continue
            t = _time_cell(r)
            m = r["metrics"]  # a peer: its better symmetrization (intersect or gdfa)
            aer = min(m["aer"], m.get("aer_intersect", 1.0)) if r["role"] == "peer" else m["aer"]
            cells.append(show(aer, digits=4) + (f" · {t}" if t else ""))
        out.append("| " + " | ".join([label, *cells, f"`{WHICH_COMMAND.format(ds)}`"]) + " |")
    return "\n".join(out)


def _headlines(rows: list[dict], task: str, text: str = "") -> str:
    table = TASKS[task]
    lines = []
    for r in _order(table, [r for r in rows if r["task"] == task and r["headline"]
                            and text in r["system"]]):
        parts = [f"{c.label} {show(r['metrics'][c.key], digits=c.digits)}" for c in table.columns
                 if c.key in r["metrics"]]
        if r["wall_s"] is not None:
            parts.append(f"wall {show(r['wall_s'], table.unit)} {table.unit}")
        if r["cpu_s"] is not None:
            parts.append(f"CPU {show(r['cpu_s'], table.unit)} {table.unit}")
        vs = _vs_peer(r, _peer(rows, r))
        if vs:
            parts.append(f"wall / CPU vs {vs[0]}: {vs[1]} / {vs[2]}")
        lines.append(f"- {_label(r['dataset'])}, {r['system']}: {'; '.join(parts)} "
                     f"(`{r['command']}`)")
    return "\n".join(lines) if lines else "(no headline rows)"


def render_block(name: str, rows: list[dict]) -> str:
    """The text of README block `name`: 'which-model', or TASK / TASK@TEXT (the task's
    headline rows, only those whose system contains TEXT)."""
    if name == "which-model":
        return _which_model(rows)
    task, _, text = name.partition("@")
    if task in TASKS:
        return _headlines(rows, task, text.replace("_", " "))
    raise ResultsError(f"unknown results block {name!r} (known: which-model, TASK or "
                       f"TASK@TEXT with TASK in {', '.join(TASKS)})")


_BLOCK = re.compile(r"(<!-- results:([\w.@-]+) -->\n)(.*?)(<!-- /results:\2 -->)", re.S)


def refresh_blocks(text: str, rows: list[dict]) -> str:
    """`text` with every results block's body replaced by render_block (opening and closing
    markers each on their own line); a start marker without its end is a ResultsError."""
    opened = re.findall(r"<!-- results:([\w.@-]+) -->", text)
    closed = re.findall(r"<!-- /results:([\w.@-]+) -->", text)
    if sorted(opened) != sorted(closed):
        raise ResultsError(f"unbalanced results blocks: opened {opened}, closed {closed}")
    return _BLOCK.sub(lambda m: m.group(1) + render_block(m.group(2), rows) + "\n" +
                      m.group(4), text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--out", type=Path, default=ROOT / "RESULTS.md")
    ap.add_argument("--readme", default=str(ROOT / "README.md"),
                    help="file whose results blocks are refreshed (none: --readme '')")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if --out or the README blocks are out of date; write nothing")
    rerun_args = ap.add_argument_group("re-running the rows' commands (benchmarks/rerun.py)")
    rerun_args.add_argument("--rerun", action="store_true",
                            help="first re-run the commands behind the rows, then render")
    rerun_args.add_argument("--dry-run", action="store_true", help="--rerun: the plan only")
    rerun_args.add_argument("--stale", action="store_true",
                            help="--rerun: only commands with a stale row")
    rerun_args.add_argument("--match", default="", help="--rerun: only commands containing this")
    rerun_args.add_argument("--limit-min", type=float, default=30.0,
                            help="--rerun: stop a command after this many minutes (default 30)")
    rerun_args.add_argument("--log-dir", type=Path, default=None,
                            help="--rerun: where each command's output goes (default: a new "
                                 "temporary folder)")
    args = ap.parse_args(argv)
    code = 0
    try:
        if args.rerun:
            from rerun import rerun

            code = rerun(read_results(args.results), args.results, limit_min=args.limit_min,
                         stale_only=args.stale, match=args.match, dry_run=args.dry_run,
                         log_dir=args.log_dir)
            if args.dry_run:
                return code
        rows = read_results(args.results)
        targets = {args.out: render_results(rows)}
        if args.readme:
            readme = Path(args.readme)
            targets[readme] = refresh_blocks(readme.read_text(encoding="utf-8"), rows)
    except (ResultsError, OSError) as err:
        print(f"report: error: {err}", file=sys.stderr)
        return 2
    stale = [p for p, text in targets.items()
             if not p.exists() or p.read_text(encoding="utf-8") != text]
    if args.check:
        for p in stale:
            print(f"report: {p} is out of date: run python benchmarks/report.py",
                  file=sys.stderr)
        return 1 if stale else 0
    for p in stale:
        p.write_text(targets[p], encoding="utf-8")
        print(f"wrote {p}")
    return code


if __name__ == "__main__":
    sys.exit(main())
