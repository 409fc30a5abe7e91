"""kept_readings.taken: a module fixture's reading that raises is kept, and raised only by the test that reads it
(test_attached_threaded_worker_cpu's and test_thread_leader_cpu_own's shared spin: a broken reader failed
all 7 of their spin's tests, 5 of them not its own)."""

from __future__ import annotations

import pytest
from kept_readings import taken


def test_a_reading_that_raised_is_raised_by_its_reader_only() -> None:
    def broken() -> int:
        raise KeyError("a reader that breaks")

    readings = {"broken": taken(broken), "sound": taken(lambda: 7)}  # the second is taken though the first raised
    assert readings["sound"].get() == 7
    with pytest.raises(KeyError, match="a reader that breaks"):
        readings["broken"].get()
    with pytest.raises(KeyError):  # again for each test that reads it
        readings["broken"].get()


def test_a_reading_of_none_is_none_not_a_failure() -> None:
    assert taken(lambda: None).get() is None  # observe's usage_of says None of a worker gone
