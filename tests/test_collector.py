"""The garbage collector pause around bulk builds (draspeed.collector)."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from draspeed.collector import collector_paused, without_collector


@pytest.fixture(autouse=True)
def _collector_back_on() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()


def test_pause_switches_the_collector_off_and_back_on() -> None:
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause is still on
    assert gc.isenabled()


def test_a_collector_the_program_switched_off_stays_off() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_the_collector_comes_back_after_an_exception() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_overlapping_pauses_on_threads_end_with_the_last() -> None:
    gc.enable()
    inside, release = threading.Event(), threading.Event()

    def hold() -> None:
        with collector_paused():
            inside.set()
            release.wait(10)

    worker = threading.Thread(target=hold)
    worker.start()
    inside.wait(10)
    with collector_paused():
        pass
    assert not gc.isenabled()  # the worker's pause has not ended
    release.set()
    worker.join(10)
    assert gc.isenabled()


def test_decorated_function_runs_paused() -> None:
    gc.enable()

    @without_collector
    def state() -> bool:
        return gc.isenabled()

    assert state() is False
    assert gc.isenabled()


def test_executable_exits_with_the_status_and_writes_everything() -> None:
    """``python -m draspeed`` leaves through os._exit: status and output intact."""
    ok = subprocess.run(
        [sys.executable, "-m", "draspeed", "demo"], capture_output=True, text=True, timeout=120
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip()
    bad = subprocess.run(
        [sys.executable, "-m", "draspeed", "feasible", "-f", "/nonexistent/cluster.yaml"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2
    assert "/nonexistent/cluster.yaml" in bad.stderr
