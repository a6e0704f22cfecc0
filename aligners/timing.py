"""Where a command's time goes: wall seconds per named phase (read, index, train, ...).

    phases = Phases()
    with phases("read"):
        ...
    with phases("index"):
        ...
    phases.summary()  # -> "read 1.2 s, index 3.4 s"

A phase entered twice adds up (in order of first entry). Phases may nest: the inner one's
time counts in the outer one too. On a GPU, pass `sync=torch.cuda.synchronize` so that
queued kernels are charged to the phase that launched them, not to the next one. No torch
import here. Cost: two clock reads (and two syncs) per phase.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["Phases"]


class Phases:
    """Accumulated wall seconds per phase name; `clock` returns seconds (monotonic)."""

    def __init__(self, *, sync: Callable[[], None] | None = None,
                 clock: Callable[[], float] = time.perf_counter):
        self._seconds: dict[str, float] = {}
        self._sync = sync
        self._clock = clock

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        """Time the block as phase `name` (also when it raises)."""
        self._seconds.setdefault(name, 0.0)  # listed in order of first entry
        if self._sync is not None:
            self._sync()
        start = self._clock()
        try:
            yield
        finally:
            if self._sync is not None:
                self._sync()
            self.add(name, self._clock() - start)

    def add(self, name: str, seconds: float) -> None:
        """Charge `seconds` to phase `name` (e.g. a time measured elsewhere)."""
        self._seconds[name] = self._seconds.get(name, 0.0) + seconds

    @property
    def seconds(self) -> dict[str, float]:
        """{phase: seconds}, in order of first entry (a copy)."""
        return dict(self._seconds)

    def summary(self) -> str:
        """One line: "read 1.2 s, index 3.4 s, train 20.1 s" (0.1 s resolution)."""
        return ", ".join(f"{name} {sec:.1f} s" for name, sec in self._seconds.items())
