"""The package's layering (docs/DESIGN.md "Layout"), read from the source with ast: no import
cycles between modules, and the forbidden arrows (models -> inference / training / commands /
Lightning, commands -> training / Lightning, lattices -> models) absent. Imports inside
functions count as much as top-level ones (a lazy import is still an arrow)."""

from __future__ import annotations

import ast
from pathlib import Path

import aligners

ROOT = Path(aligners.__file__).resolve().parent
LIGHTNING = ("lightning", "pytorch_lightning")

# Cycles allowed for now; this list must end empty.
ALLOWED_CYCLES: list[frozenset] = []  # none: a new cycle fails here


def _modules(root: Path = ROOT) -> dict[str, Path]:
    pkg, base = root.name, root.parent
    out = {}
    for p in root.rglob("*.py"):
        rel = p.relative_to(base).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        assert parts[0] == pkg
        out[".".join(parts)] = p
    return out


def _imports(name: str, path: Path) -> set[str]:
    """Every module name `name` imports (absolute, relative resolved; submodule guesses for
    `from X import y` included)."""
    pkgname = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = pkgname.split(".")
                prefix = ".".join(parts[: len(parts) - node.level + 1])
                mod = prefix + ("." + node.module if node.module else "")
            else:
                mod = node.module or ""
            found.add(mod)
            found.update(mod + "." + a.name for a in node.names)
    return found


def import_graph(root: Path = ROOT) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(own, external): module -> the package's modules it imports (its own parent packages'
    `__init__` excluded, as Python runs those anyway), and module -> top-level names of the
    other packages it imports."""
    mods = _modules(root)
    pkg = root.name

    def resolve(t: str) -> str | None:
        while t and t not in mods:
            t = t.rpartition(".")[0]
        return t or None

    own: dict[str, set[str]] = {m: set() for m in mods}
    ext: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        for t in _imports(m, p):
            if t.split(".")[0] != pkg:
                ext[m].add(t.split(".")[0])
                continue
            r = resolve(t)
            if r and r != m and not (m.startswith(r + ".") and mods[r].name == "__init__.py"):
                own[m].add(r)
    return own, ext


def cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of 2+ nodes (each one an import cycle)."""
    reach = {}
    for v in edges:
        seen, todo = set(), [v]
        while todo:
            for w in edges.get(todo.pop(), ()):
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        reach[v] = seen
    comps = {frozenset({v} | {w for w in reach[v] if v in reach[w]}) for v in edges}
    return sorted((c for c in comps if len(c) > 1), key=sorted)


def test_cycle_finder_finds_cycles():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}}
    assert cycles(g) == [frozenset("abc")]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_graph_reads_lazy_and_relative_imports(tmp_path):
    pkg = tmp_path / "pk"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "a.py").write_text("def f():\n    from . import b\n")
    (pkg / "sub" / "b.py").write_text("from pk.sub.a import f\nimport lightning.pytorch\n")
    own, ext = import_graph(pkg)
    assert own["pk.sub.a"] == {"pk.sub.b"} and own["pk.sub.b"] == {"pk.sub.a"}
    assert ext["pk.sub.b"] == {"lightning"}
    assert cycles(own) == [frozenset({"pk.sub.a", "pk.sub.b"})]


def test_no_import_cycles():
    found = cycles(import_graph()[0])
    new = [sorted(c) for c in found if c not in ALLOWED_CYCLES]
    assert not new, f"import cycles: {new}"
    gone = [sorted(c) for c in ALLOWED_CYCLES if c not in found]
    assert not gone, f"these cycles are gone: remove them from ALLOWED_CYCLES: {gone}"


def _violations(layer: str, banned_own: tuple[str, ...], banned_ext: tuple[str, ...] = ()):
    own, ext = import_graph()
    out = []
    for m in own:
        if not (m == layer or m.startswith(layer + ".")):
            continue
        out += [f"{m} -> {t}" for t in sorted(own[m])
                if any(t == b or t.startswith(b + ".") for b in banned_own)]
        out += [f"{m} -> {t}" for t in sorted(ext[m]) if t in banned_ext]
    return out


def test_models_import_no_inference_training_commands_or_lightning():
    bad = _violations("aligners.models", ("aligners.inference", "aligners.training",
                                          "aligners.commands"), LIGHTNING)
    assert not bad, bad


def test_commands_import_no_training_or_lightning():
    bad = _violations("aligners.commands", ("aligners.training",), LIGHTNING)
    assert not bad, bad


def test_lattices_import_no_models():
    bad = _violations("aligners.lattices", ("aligners.models",))
    assert not bad, bad
