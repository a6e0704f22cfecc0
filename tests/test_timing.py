"""aligners.timing.Phases: per-phase wall (self) time with a scripted clock."""

from types import SimpleNamespace

import pytest

import aligners.timing
from aligners.timing import Phases


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def install(self, monkeypatch):
        """Make `aligners.timing` read this clock instead of time.perf_counter."""
        monkeypatch.setattr(aligners.timing, "time", SimpleNamespace(perf_counter=self))
        return self


def test_phases_self_time_order_repeats_and_errors(monkeypatch):
    clock = _Clock().install(monkeypatch)
    synced = []
    phases = Phases(sync=lambda: synced.append(clock.now))
    with phases("read"):
        clock.now += 1.25
    with phases("index"):
        clock.now += 3.0
        with phases("keys"):  # nested: charged to keys only
            clock.now += 0.5
        clock.now += 0.25
    with pytest.raises(RuntimeError), phases("read"):  # repeated: adds up, even on errors
        clock.now += 0.5
        raise RuntimeError
    with phases("train"):
        clock.now += 20.06
    assert phases.seconds == {"read": 1.75, "index": 3.25, "keys": 0.5, "train": 20.06}
    assert phases.summary() == "read 1.8 s, index 3.2 s, keys 0.5 s, train 20.1 s"
    assert len(synced) == 10  # before and after each of the 5 timed blocks
    assert Phases().summary() == ""


def test_iterate_charges_producing_the_items_to_its_phase(monkeypatch):
    """A lazy reader consumed inside the index build: reading and indexing are split and
    add up to the wall time."""
    clock = _Clock().install(monkeypatch)
    phases = Phases()

    def reader():
        for k in range(3):
            clock.now += 1.0  # reading one item
            yield k
        clock.now += 0.5  # reading the end of the file

    with phases("index"):
        got = []
        for item in phases.iterate("read", reader()):
            clock.now += 2.0  # indexing one item
            got.append(item)
    assert got == [0, 1, 2]
    assert phases.seconds == {"index": 6.0, "read": 3.5}
    assert clock.now == 9.5 == sum(phases.seconds.values())


def test_phases_real_clock_measures_something():
    import time

    phases = Phases()
    with phases("sleep"):
        time.sleep(0.02)
    assert 0.015 < phases.seconds["sleep"] < 5
