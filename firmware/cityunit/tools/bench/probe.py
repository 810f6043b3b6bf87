"""The process `cityunit bench --instructions` counts under callgrind: one tree's unit
(this checkout's or another revision's), started as its service starts it, with a stand-in
bus that drops the display's bytes and gpiozero's mock pins, and windows marked for the
count.

Run with `python -S` (site's .pth files are the venv's, not the unit's: the editable
install's finder alone is 60 M instructions), imported (byte-compiled, so its own
compiling is not counted) before anything of the tree is:

    PYTHONPATH=<this folder> python -S -c "import probe; probe.main()" SCENARIO TREE CONFIG LABELS

A window is what runs between two calls of `mark()` (a getppid(2), which callgrind dumps
before: `--dump-before=getppid`); the label of each window goes to LABELS, a line each,
in order. This module knows no tree's modules by heart: where the rooms moved
(firmware/cityunit's sub-packages), it looks in both places.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing, threading and collections: imported when first needed,
if TYPE_CHECKING:  # after the first light, whose count would have them otherwise
    import threading
    from collections.abc import Callable
    from typing import Any

TREE = CONFIG = DEV = ""  # the tree's root, its config file, the run's /dev: main() sets
LABELS = -1  # the labels' file, open for appending


def mark() -> None:
    """One end of a window: callgrind dumps its count here."""
    os.getppid()


def window(label: str) -> None:
    """A window opens: named, then marked."""
    os.write(LABELS, label.encode() + b"\n")
    mark()


WAIT_S = 120  # for any one thing the unit does: far beyond callgrind's pace


def wait(event: threading.Event, what: str) -> None:
    """`event`, or the probe ends with a failure that says what never came: a window
    left open would shift every later one onto the wrong label."""
    if not event.wait(WAIT_S):
        fail(f"{what} never came")


def fail(why: str) -> None:
    """The probe ends, saying why: its parent reports it, with no figure."""
    os.write(2, f"probe: {why}\n".encode())
    os._exit(3)


def find(*names: str):  # type: ignore[no-untyped-def]
    """The first of `names` ("module:attribute") that this tree has."""
    import importlib

    for name in names:
        module, _, attribute = name.partition(":")
        try:
            return importlib.import_module(module), attribute
        except ModuleNotFoundError:
            continue
    raise SystemExit(f"probe: none of {names} in {TREE}")


def service() -> list[str]:
    """The service's command line (systemd/cityunit.service's ExecStart), the seed fixed."""
    return ["cityunit", "run", "--config", CONFIG, "--or-last-good", "--seed", "3"]


def entry() -> None:
    """The tree's service, as systemd starts it: what pip's console script runs (`re`
    first)."""
    sys.argv = service()
    import re  # noqa: F401 (pip's console script's first line)

    command, name = find("cityunit.__main__:main")  # the measured tree's, not this one's
    raise SystemExit(getattr(command, name)())


def drop_the_bus() -> None:
    """The display's bus made to drop what it is sent: smbus2's, which luma opens on the
    Pi's I2C port; or, for a tree whose unit has its own (display/i2c.py), the run's file
    for it in DEV, its ioctls answered."""
    if not os.path.exists(os.path.join(TREE, OWN_I2C)):
        kernel().drop_i2c()
        return
    import fcntl

    if not isinstance(fcntl, kernel().Ioctl):  # (the first stage's answers it already)
        sys.modules["fcntl"] = kernel().Ioctl(fcntl, DEV)
    from cityunit.display import glass, i2c

    glass.DEV = DEV
    setattr(i2c, "fcntl", sys.modules["fcntl"])  # noqa: B010 (a session imported it first)


def kernel() -> Any:
    """kernel.py, beside this file, imported top-level as this module is."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        return __import__("kernel")
    finally:
        del sys.path[0]


def when_ready(then) -> None:  # type: ignore[no-untyped-def]
    """`then()` on the loop thread once the unit says READY (its first frame sent)."""
    module, name = find("cityunit.parts.notify:Notifier", "cityunit.notify:Notifier")
    notifier = getattr(module, name)
    ready = notifier.ready

    def told(self) -> None:  # type: ignore[no-untyped-def]
        ready(self)
        then()

    notifier.ready = told


def ready() -> None:
    """From exec to READY, the first frame on the bus: the process ends there. A tree
    with a first stage starts as its service's launcher does (systemd/start): the first
    light (a window, marked as soon as it is lit), then the unit."""
    if not os.path.exists(os.path.join(TREE, FIRST_STAGE)):
        drop_the_bus()
        when_ready(lambda: os._exit(0))
        entry()
    first_light()
    drop_the_bus()  # (the unit's own imports, come earlier: the count's total is the same)
    when_ready(lambda: os._exit(0))
    # (site.main(): the probe's paths are set already)
    command, name = find("cityunit.__main__:main")
    raise SystemExit(getattr(command, name)())


def first_light() -> None:
    """systemd/start's first stage, to its mark. The GPIO chip and the bus are files in
    the run's folder (DEV), their ioctls answered by kernel.Ioctl; the probe's own set-up
    for the unit (the bus, READY's hook) comes after it."""
    import fcntl  # (the first stage's own import, come first)

    sys.modules["fcntl"] = kernel().Ioctl(fcntl, DEV)
    sys.argv = service()
    from cityunit.service.first_light import keepsake, light  # as systemd/start does

    light(keepsake(), sys.argv)
    window("first-light")
    mark()


def lit_alone() -> None:
    """The first light alone (the display on SPI): the process ends once it is lit."""
    first_light()
    os._exit(0)


FIRST_STAGE = "firmware/cityunit/service/first_light.py"
OWN_I2C = "firmware/cityunit/display/i2c.py"  # the unit's I2C without smbus2


def keep() -> None:
    """Not counted: the tree's unit started and stopped cleanly once READY, as a service
    is, so that it keeps what its first stage reads at the next start (in STATE_DIRECTORY),
    the GPIO chip and the bus in the run's folder."""
    import signal

    drop_the_bus()
    kernel().drop_spi()  # (the display on SPI: lit-alone's)
    when_ready(lambda: os.kill(os.getpid(), signal.SIGTERM))
    from cityunit.service import keepsake

    keepsake.gpio_chip = lambda factory: os.path.join(DEV, "gpiochip0")
    sys.argv = service()
    command, name = find("cityunit.__main__:main")
    raise SystemExit(getattr(command, name)())


TAPS, SLICES = 5, 12  # a tick's readying: 3 screens, each rendered, packed, planned 2 ways
PRESSES = 2 * SLICES


class Session:
    """Once the unit is READY, from a thread of the probe: the switch ON and a press on
    its first readying (a window apart: it pays for first uses), then TAPS taps of
    AUCTION, each a window from the release to its frame sent (every expected screen
    readied first), and PRESSES presses of AUCTION landing as each of the first SLICES
    readyings after a tick starts (a screen a call, or a slice of one), in the hour and in
    an auction, each a window from the edge to its click on the buzzer's pin (the LED's
    changes are the game's)."""

    def __init__(self) -> None:
        from gpiozero.pins.mock import MockPWMPin

        self.hooks: dict[str, Callable[[], None]] = {}
        self.factories: list[Any] = []
        hook = self.hook

        from cityunit.config import Config

        buzzer = Config().pins.buzzer

        class Probed(MockPWMPin):  # type: ignore[misc]
            def _change_state(self, value: object) -> bool:
                changed: bool = super()._change_state(value)
                if changed and self.info.name == f"GPIO{buzzer}":
                    hook("buzzer")
                return changed

        self.pin_class = Probed
        self._patch(("cityunit.parts.gpio:mock_pins", "cityunit.parts:mock_pins"), self._pins)
        self._patch(("cityunit.display.oled:LumaPanel.display",
                     "cityunit.oled:LumaPanel.display"), self._display)  # fmt: skip
        self._patch(("cityunit.display.panel:Display.prepare_next",
                     "cityunit.display:Display.prepare_next"), self._readying)  # fmt: skip

    @staticmethod
    def _patch(names: tuple[str, ...], then: Callable[[Any], Any]) -> None:
        """The first of `names` ("module:Class.member") the tree has, replaced by
        `then(the original)`."""
        owner, path = find(*names)
        *owners, member = path.split(".")
        for name in owners:
            owner = getattr(owner, name)
        setattr(owner, member, then(getattr(owner, member)))

    def _pins(self, made: Callable[..., Any]) -> Callable[..., Any]:
        def mock_pins(pin_class: object = None) -> Any:  # the tree's own, with Probed pins
            self.factories.append(made(self.pin_class))
            return self.factories[-1]

        return mock_pins

    def _display(self, show: Callable[..., None]) -> Callable[..., None]:
        def display(panel: object, image: object) -> None:
            show(panel, image)
            self.hook("frame")

        return display

    def _readying(self, ready_one: Callable[[Any], None]) -> Callable[[Any], None]:
        def prepare_next(display: Any) -> None:
            self.hook("readying")
            ready_one(display)
            if not display.preparing:
                self.hook("readied")

        return prepare_next

    def hook(self, name: str) -> None:
        """What waits on `name` (a frame sent, a readying, the buzzer), run once."""
        if (then := self.hooks.pop(name, None)) is not None:
            then()

    def waiting(self, name: str, then: Callable[[], None] = lambda: None) -> threading.Event:
        """An event set when hook `name` next runs, after `then()`."""
        import threading

        done = threading.Event()

        def fired() -> None:
            then()
            done.set()

        self.hooks[name] = fired
        return done

    def press_as_readying(self, button: Any, skip: int, label: str = "readying") -> None:
        """`button` pressed on the loop thread as its `skip`+1-th readying starts; the
        window closes on the buzzer's next change, its click."""
        import threading

        clicked = threading.Event()

        def click() -> None:
            mark()
            clicked.set()

        def press() -> None:  # on the loop thread
            nonlocal skip
            if skip:
                skip -= 1
                self.hooks["readying"] = press
                return
            self.hooks["buzzer"] = click  # armed here: switching ON sounds too
            window(label)
            button.drive_low()

        self.hooks["readying"] = press
        wait(clicked, f"the click of a press as a readying starts ({label})")
        time.sleep(0.1)
        button.drive_high()

    def drive(self) -> None:
        """The player's side (its own thread), or the probe's failure if it fails."""
        try:
            self._drive()
        except BaseException as e:  # any: the unit would run on, uncounted
            fail(f"{type(e).__name__}: {e}")

    def _drive(self) -> None:
        from cityunit.config import Config

        pins = Config().pins
        power, auction = (self.factories[0].pin(n) for n in (pins.power, pins.auction))
        power.drive_low()  # the game on: its first hour, and a press on its first readying
        self.press_as_readying(auction, 0, "first-press")  # (the first click's own costs)
        time.sleep(2)
        tap(auction)  # stopped
        time.sleep(6)  # back to the hour's screen
        for _ in range(TAPS):
            self.waiting("readied").wait(5)  # the auction's first screen among them
            auction.drive_low()
            time.sleep(0.1)
            self.waiting("readied").wait(3)  # (none to ready: all were)
            done = self.waiting("frame", mark)
            window("tap")
            auction.drive_high()  # the tap is decided on release: a new screen
            wait(done, "a tap's frame")
            time.sleep(2)
            tap(auction)  # stopped
            time.sleep(6)
        for n in range(PRESSES):  # in the hour, then in an auction
            if n >= PRESSES // 2:
                tap(auction)
                time.sleep(2)
            self.press_as_readying(auction, n % SLICES)
            if n < PRESSES // 2:
                time.sleep(2)
                tap(auction)
            time.sleep(6)
        os._exit(0)


def tap(button: Any) -> None:
    """A tap: pressed, and let go 100 ms on."""
    button.drive_low()
    time.sleep(0.1)  # a tap, not a hold
    button.drive_high()


def session() -> None:
    """The unit as its service starts it, a Session's player on it once READY."""
    import threading

    player = Session()
    up = threading.Event()

    def started() -> None:
        up.set()
        threading.Thread(target=player.drive, daemon=True).start()

    when_ready(started)
    threading.Thread(target=wait, args=(up, "READY"), daemon=True).start()
    drop_the_bus()
    entry()


def hour() -> None:
    """The tree's own in-process hour of play (`cityunit bench`'s), played twice: the
    first pays for its imports and first drawings, the second is the hour's own cost."""
    module, name = find(
        "cityunit.tools.bench.hour:virtual_hour", "cityunit.bench.hour:virtual_hour"
    )
    play = getattr(module, name)
    window("first-hour")  # with what a first hour imports and draws for the first time
    play()
    mark()
    window("hour")
    play()
    mark()
    os._exit(0)


def main() -> None:
    """SCENARIO TREE CONFIG LABELS (sys.argv): the tree's modules first on the path, then
    the probe's venv's (CITYUNIT_PROBE_PATH), not the probe's own folder, and the
    scenario run."""
    global TREE, CONFIG, DEV, LABELS
    scenario, TREE, CONFIG, labels = sys.argv[1:]
    DEV = os.path.join(os.path.dirname(CONFIG), "dev")
    LABELS = os.open(labels, os.O_WRONLY | os.O_APPEND)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [os.path.join(TREE, "firmware"), os.path.join(TREE, "sim"),
                   *(p for p in sys.path if p and os.path.abspath(p) != here)]  # fmt: skip
    sys.path += os.environ.get("CITYUNIT_PROBE_PATH", "").split(os.pathsep)
    scenarios = {"ready": ready, "lit-alone": lit_alone, "keep": keep, "session": session,
                 "hour": hour}  # fmt: skip
    scenarios[scenario]()


if __name__ == "__main__":
    main()
