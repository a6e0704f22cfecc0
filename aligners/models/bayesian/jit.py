"""Compile the exact sampler's numba kernels in a short-lived child process when numba's
on-disk cache does not hold them yet (a fresh install, or after the sources changed).

Compiling in-process leaves the compiler's memory behind (about 60-70 MiB that the heap trim
does not return) on top of a large run's peak (954 MiB instead of 863 MiB at Hansards 200k
on a first run). A child that compiles and caches every kernel on a tiny corpus, started
while the parent reads its text, lets the parent load machine code from the cache instead.
With the kernels cached no child starts (a check of numba's cache index files,
milliseconds). Cost: the child's compile time (what the parent would have spent) plus its
start-up (about 0.5 s CPU), once per fresh cache; its memory is its own.

This module imports no other module of the family (the kernel modules call
`wait_compile_child`): the caller names the kernels (`model.exact_kernels`) and the child
runs `aligners.models.bayesian.model.warm_all`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["kernels_cached", "start_compile_child", "wait_compile_child"]

_child: subprocess.Popen | None = None
_ENV = "ALIGNERS_BAYES_COMPILE_CHILD"


def kernels_cached(kernels: Sequence) -> bool:
    """True when numba's cache index of every kernel (numba dispatchers) exists for the
    current sources (or numba does not cache: then a child would not help either); False
    when unsure."""
    try:
        files = [getattr(k._cache, "_cache_file", None) for k in kernels]
        return all(f is None or f._load_index() for f in files)
    except Exception:  # numba's internals moved: compile in a child to be safe
        return False


def start_compile_child(kernels: Sequence) -> bool:
    """Start the compiling child unless `kernels` are cached (or a child runs); returns
    whether one was started. The parent calls `wait_compile_child` before its first kernel."""
    global _child
    if _child is not None or os.environ.get(_ENV) or kernels_cached(kernels):
        return False  # (_ENV: this is the child itself)
    root = str(Path(__file__).resolve().parents[3])  # the folder holding this `aligners`
    env = {**os.environ, _ENV: "1"}
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                else "")
    _child = subprocess.Popen(
        [sys.executable, "-c", "from aligners.models.bayesian.model import warm_all; warm_all()"],
        cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    return True


def wait_compile_child() -> int | None:
    """Wait for a started child; its exit status (None if none ran). A failed child only
    means that the parent compiles what is missing itself, as without it."""
    global _child
    if _child is None:
        return None
    code = _child.wait()
    _child = None
    return code
