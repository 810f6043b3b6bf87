"""Timers are handles: each owner's timer is its own, and they fire in time order, ties in
the order they were set. (Deadlines used to share one namespace of names, where setting
a name already in use silently dropped the other owner's deadline.)"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cityunit.core.timers import Timers

ops = st.lists(
    st.one_of(
        st.tuples(st.just("set"), st.integers(0, 4), st.integers(0, 50)),
        st.tuples(st.just("cancel"), st.integers(0, 4), st.just(0)),
        st.tuples(st.just("run"), st.just(0), st.integers(0, 50)),
    ),
    max_size=40,
)


def test_two_owners_setting_the_same_time_both_fire_in_the_order_they_set() -> None:
    timers, fired = Timers(), []
    menu = timers.timer(lambda: fired.append("menu"))
    hour = timers.timer(lambda: fired.append("hour"))
    menu.set(30)
    hour.set(30)
    menu.set(30)  # setting again moves it behind the other
    while (due := timers.pop_due(100)) is not None:
        due[1].fire()
    assert fired == ["hour", "menu"]


@given(ops, st.sampled_from([256, 1, 3]))
def test_timers_match_a_model_of_one_pending_time_each(
    steps: list[tuple[str, int, int]], floor: int
) -> None:
    timers, fired = Timers(), []
    timers.floor = timers.limit = floor  # small: stale entries swept out all the time
    handles = [timers.timer(lambda i=i: fired.append(i)) for i in range(5)]
    model: dict[int, tuple[int, int]] = {}  # timer -> (time, order set)
    expected: list[int] = []
    now = order = 0
    for op, i, t in steps:
        if op == "set":
            order += 1
            handles[i].set(t)
            model[i] = (t, order)
        elif op == "cancel":
            handles[i].cancel()
            model.pop(i, None)
        else:
            now = max(now, t)
            while (due := timers.pop_due(now)) is not None:
                due[1].fire()
            for i_due in sorted((k for k, v in model.items() if v[0] <= now), key=model.get):
                expected.append(i_due)
                del model[i_due]
        assert timers.next() == min((v[0] for v in model.values()), default=None)
        assert [h.pending for h in handles] == [k in model for k in range(5)]
    assert fired == expected


def test_a_flood_of_presses_does_not_pile_up_timers() -> None:
    """Each press moves timers seconds ahead; with no time passing (the virtual clock),
    the entries they leave behind are swept out, not kept until their time."""
    from cityunit.core.gestures import Button
    from cityunit.core.rules import Rules
    from cityunit.core.unit import Unit

    unit = Unit(Rules())
    unit.switch(True, 0)
    for _ in range(20_000):
        unit.press(Button.AUCTION, 0)
        unit.release(Button.AUCTION, 0)
    assert len(unit.timers.heap) < 600
