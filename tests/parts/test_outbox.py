"""A front end's outbox alone: replies kept, events bounded and their drops counted and
told, the virtual clock's wait ended by a stop, nothing left after a close."""

from __future__ import annotations

import threading

from cityunit.console.outbox import Outbox


def outbox(virtual: bool = False, stop: threading.Event | None = None) -> Outbox:
    stopping = stop or threading.Event()
    return Outbox(virtual, stopping.is_set, lambda n: f"DROPPED {n}", "a test", limit=4)


def lines(box: Outbox) -> list[str]:
    box.close()
    out = []
    while (chunk := box.take()) is not None:
        out += chunk.data.decode().splitlines()
        box.sent(chunk)
    return out


def test_past_the_bound_events_are_dropped_counted_and_told_replies_never() -> None:
    box = outbox()
    for n in range(10):
        box.event(f"E{n}")
    box.reply("OK")
    box.flush()
    assert lines(box) == ["E0", "E1", "E2", "E3", "DROPPED 6", "OK"]


def test_once_behind_events_are_kept_again_only_when_half_caught_up() -> None:
    box = outbox()
    for n in range(5):
        box.event(f"E{n}")  # E4 dropped: behind
    box.flush()
    taken = box.take()
    assert taken is not None
    box.sent(taken)  # the subscriber took all four
    box.event("E5")
    assert lines(box) == ["DROPPED 1", "E5"]


def test_on_the_virtual_clock_the_loop_waits_and_a_stop_ends_the_wait() -> None:
    stop = threading.Event()
    box = outbox(virtual=True, stop=stop)
    for n in range(4):
        box.event(f"E{n}")
    waiting = threading.Thread(target=box.event, args=("E4",))
    waiting.start()
    with box._cond:  # before it waits, it hands the four over: then it can only wait
        assert box._cond.wait_for(lambda: len(box._chunks) == 1, timeout=10)
    assert waiting.is_alive(), "no room and no stop: the loop waits for the subscriber"
    stop.set()
    box.wake()
    waiting.join(5)
    assert not waiting.is_alive()
    assert lines(box)[:4] == ["E0", "E1", "E2", "E3"]


def test_a_closed_outbox_gives_what_is_left_then_nothing() -> None:
    box = outbox()
    box.reply("OK")
    assert lines(box) == ["OK"]
    assert box.take() is None
    box.wait_drained()  # returns: all sent
