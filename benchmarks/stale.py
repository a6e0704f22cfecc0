"""Flag results rows whose family code changed after their measurement.

    python benchmarks/stale.py          # list the stale rows of benchmarks/results/*.json
    python benchmarks/stale.py --mark   # and mark them: their note starts with "† "

A row of ours names the commit it was measured at ("recorded in commit X" / "at commit X").
It is stale when a commit after X changed the code its figure depends on (`CODE`: the
family's model, task and shared layers, by the row's task and system); a commit that changes
only comments, docstrings or layout of Python files (the same syntax tree) does not count.
The mark lives in the results file (so `report.py` renders it without git: a shallow clone
renders the same page); re-measuring a row replaces it with an unmarked one. Peers and
papers are never stale.
"""

from __future__ import annotations

import argparse
import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import RESULTS_DIR, ROOT, load_rows, save_rows  # noqa: E402

__all__ = ["CODE", "code_of", "stale_rows", "main"]

MARK = "† "
_GIT = ("git", "-C", str(ROOT))
_WORD = ("aligners/data", "aligners/symmetrize.py", "aligners/commands/align.py")
CODE = {  # (task prefix, system text) -> the paths a row's figure depends on
    ("word", "bayesian"): (*_WORD, "aligners/models/bayesian"),
    ("word", "gappy"): (*_WORD, "aligners/models/gappy_hsmm", "aligners/models/hmm",
                        "aligners/lattices"),
    ("word", "hmm"): (*_WORD, "aligners/models/hmm", "aligners/lattices"),
    ("word", "default"): (*_WORD, "aligners/models"),
    ("phrasal", ""): ("aligners/models/gappy_hsmm", "aligners/models/hmm",
                      "aligners/training/gappy_hsmm.py", "aligners/training/word_task.py",
                      "aligners/inference/choose.py", "aligners/lattices"),
    ("bitext", ""): (*_WORD, "aligners/models/hmm", "aligners/lattices"),
    ("gpu", ""): ("aligners/models/hmm", "aligners/lattices", "aligners/data"),
    ("lattices", ""): ("aligners/lattices",),
    ("mono", ""): ("aligners/models/mono", "aligners/features", "aligners/training/mono.py"),
    ("lclr", ""): ("aligners/models/lclr", "aligners/training/lclr.py",
                   "aligners/training/_lclr_pairs.py", "aligners/features/parse.py",
                   "aligners/ilp.py"),
    ("reorder", ""): ("aligners/models/reorder", "aligners/features/reorder.py",
                      "aligners/training/reorder.py"),
}


def code_of(row: dict) -> tuple[str, ...]:
    """The paths a row of ours depends on (empty: not ours, or no rule)."""
    if row["role"] != "ours":
        return ()
    for (task, text), paths in CODE.items():
        if row["task"].startswith(task) and text in row["system"]:
            return paths
    return ()


def _code(source: str | None):
    """A Python source's syntax tree without docstrings (comments are not in it): equal for
    two versions that differ only in comments, docstrings or layout. None: not Python."""
    if source is None:
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def _show(rev: str, path: str) -> str | None:
    out = subprocess.run([*_GIT, "show", f"{rev}:{path}"], capture_output=True)
    return out.stdout.decode("utf-8", "replace") if out.returncode == 0 else None


@functools.cache
def _changes_file(commit: str, path: str) -> bool:
    """Whether `commit` changes the code of file `path`: not Python, or a syntax tree
    (docstrings left out) that differs from its parent's."""
    before = _code(_show(f"{commit}^", path)) if path.endswith(".py") else None
    return before is None or before != _code(_show(commit, path))


@functools.cache
def _files(commit: str) -> tuple[str, ...]:
    return tuple(subprocess.run([*_GIT, "diff", "--name-only", f"{commit}^", commit],
                                capture_output=True, text=True, check=True).stdout.split())


def _changes_code(commit: str, paths: tuple[str, ...]) -> bool:
    """Whether `commit` changes code under `paths` (a folder or a file each)."""
    return any(_changes_file(commit, f) for f in _files(commit)
               if any(f == p or f.startswith(p.rstrip("/") + "/") for p in paths))


def _changes(commit: str, paths: tuple[str, ...]) -> int | None:
    """Commits after `commit` that change code under `paths` (comment-, docstring- and
    layout-only commits do not count; None: `commit` is not in this history)."""
    if subprocess.run([*_GIT, "cat-file", "-e", f"{commit}^{{commit}}"],
                      capture_output=True).returncode != 0:
        return None
    out = subprocess.run([*_GIT, "rev-list", "--no-merges", f"{commit}..HEAD", "--", *paths],
                         capture_output=True, text=True, check=True).stdout
    return sum(_changes_code(c, paths) for c in out.split())


def stale_rows(rows: list[dict]) -> list[tuple[dict, str]]:
    """[(row, why)] for the rows whose code changed after their commit."""
    out = []
    for row in rows:
        paths = code_of(row)
        m = re.search(r"commit ([0-9a-f]{7,40})", row["measured"])
        if not paths or m is None:
            continue
        n = _changes(m.group(1), paths)
        if n is None:
            out.append((row, f"measured at {m.group(1)}, not in this history"))
        elif n:
            out.append((row, f"{n} later commit(s) changed {', '.join(paths)}"))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mark", action="store_true", help="mark the stale rows in the files")
    ap.add_argument("--results", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    for path in sorted(args.results.glob("*.json")):
        rows = load_rows(path)
        found = stale_rows(rows)
        for row, why in found:
            print(f"{path.name}: {row['dataset']} / {row['system']}: {why}")
            note = row["note"] or ""
            if args.mark and not note.startswith(MARK):
                row["note"] = MARK + "stale: family code changed after the measurement" + (
                    f"; {note}" if note else "")
        if args.mark and found:
            save_rows(path, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
