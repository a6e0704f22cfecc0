"""aligners.timing.Phases: per-phase wall time with a scripted clock."""

import pytest

from aligners.timing import Phases


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_phases_add_up_in_order_nest_and_survive_errors():
    clock = _Clock()
    synced = []
    phases = Phases(clock=clock, sync=lambda: synced.append(clock.now))
    with phases("read"):
        clock.now += 1.25
    with phases("index"):
        clock.now += 3.0
        with phases("keys"):  # nested: counts in both
            clock.now += 0.5
    with pytest.raises(RuntimeError), phases("read"):  # repeated: adds up
        clock.now += 0.5
        raise RuntimeError
    phases.add("train", 20.06)
    assert phases.seconds == {"read": 1.75, "index": 3.5, "keys": 0.5, "train": 20.06}
    assert phases.summary() == "read 1.8 s, index 3.5 s, keys 0.5 s, train 20.1 s"
    assert len(synced) == 8  # before and after each of the 4 timed blocks
    assert Phases().summary() == ""


def test_phases_real_clock_measures_something():
    import time

    phases = Phases()
    with phases("sleep"):
        time.sleep(0.02)
    assert 0.015 < phases.seconds["sleep"] < 5
