"""The simulator in a terminal: the braille OLED, and the real curses UI under a pty."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator

import pyte
from PIL import Image

from cityunit.config import Config
from cityunit.core.screens import HourScreen
from cityunit.display.render import render
from cityunit.loop.clock import VirtualClock
from cityunit_sim.board import SimBoard
from cityunit_sim.clock import HandClock
from cityunit_sim.terminal import KEYS, Terminal, braille
from fakes import RealTime


def test_braille_keeps_every_pixel() -> None:
    image = render(HourScreen(1, "12:34"), "en")
    rows = braille(image)
    assert len(rows) == 16 and all(len(r) == 64 for r in rows)
    back = Image.new("1", (128, 64))
    bits = {0x01: (0, 0), 0x02: (0, 1), 0x04: (0, 2), 0x08: (1, 0),
            0x10: (1, 1), 0x20: (1, 2), 0x40: (0, 3), 0x80: (1, 3)}  # fmt: skip
    for cy, row in enumerate(rows):
        for cx, ch in enumerate(row):
            for bit, (dx, dy) in bits.items():
                if (ord(ch) - 0x2800) & bit:
                    back.putpixel((cx * 2 + dx, cy * 4 + dy), 1)
    assert back.tobytes() == image.tobytes()


def test_the_terminal_shows_led_tone_mode_and_events() -> None:
    with SimBoard(Config(), VirtualClock(), seed=2) as board:
        check_terminal(board)


def check_terminal(board: SimBoard) -> None:
    term = Terminal(board)
    board.runtime.pump()
    assert term.key(" ")
    board.runtime.pump()
    text = "\n".join(term.lines())
    assert "switch ON" in text and "mode idle" in text and "hour.start 1" in text
    assert "♪ 2093 Hz" in text, "the power-on tune is playing"
    term.hold(("auction",), 0)
    board.runtime.pump()
    term.release_due()
    board.runtime.clock.set_ms(30)  # past the debounce window, where the tap is decided
    board.runtime.pump()
    assert "mode auction" in "\n".join(term.lines())
    assert not term.key("q")


def read_screen(fd: int, screen: pyte.Screen, stream: pyte.ByteStream, want: str) -> str:
    """Feed the terminal's output into an emulator until `want` is on screen (or 20 s)."""
    end = time.monotonic() + 20
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                stream.feed(os.read(fd, 65536))
            except OSError:
                break
        text = "\n".join(screen.display)
        if want in text:
            return text
    raise AssertionError(f"{want!r} never showed:\n" + "\n".join(screen.display))


@contextlib.contextmanager
def curses_sim(rows: int, cols: int, *args: str) -> Iterator[tuple[int, pyte.Screen]]:
    """`cityunit sim` in a pty of `rows` x `cols`, with no display: its terminal UI."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env |= {"TERM": "xterm-256color", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "COLUMNS": str(cols), "LINES": str(rows)}  # fmt: skip
    env.pop("SDL_VIDEODRIVER", None)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "cityunit", "sim", *args],
        stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True,
    )  # fmt: skip
    os.close(slave)
    try:
        yield master, pyte.Screen(cols, rows)
        os.write(master, b"q")
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
        os.close(master)


def test_the_console_pty_stays_in_the_header_however_many_events_come() -> None:
    """Issue 38: the pty's path was an event line, pushed off by the next two events."""
    with SimBoard(Config(), VirtualClock(), seed=2) as board:
        term = Terminal(board, console="/dev/pts/7")
        for _ in range(4):
            term.key(" ")  # ON and OFF: events enough to scroll a note away
            board.runtime.pump()
        lines = term.lines(rows=24)
        assert lines[0].startswith("┌─ MONOPOLY CITY unit · console /dev/pts/7 ─")
        assert len(lines[0]) == len(lines[1]), "the box keeps its width"


def test_the_curses_ui_runs_in_a_pty_and_takes_keys() -> None:
    with curses_sim(32, 100, "--seed", "2") as (master, screen):
        stream = pyte.ByteStream(screen)
        read_screen(master, screen, stream, "switch OFF")
        os.write(master, b" ")
        read_screen(master, screen, stream, "mode idle")
        os.write(master, b"b")
        text = read_screen(master, screen, stream, "  permit ")
        assert "⣿" in text, "the OLED drawn in braille"
        assert "LED" in text and "buzzer" in text


def test_an_80x24_terminal_shows_the_keys_and_a_tap_is_a_tap_at_speed_60() -> None:
    with curses_sim(24, 80, "--seed", "2", "--speed", "60") as (master, screen):
        stream = pyte.ByteStream(screen)
        read_screen(master, screen, stream, "q quit")
        assert screen.display[-1].strip() == KEYS, "the keys, on the last line"
        os.write(master, b" ")
        read_screen(master, screen, stream, "mode idle")
        os.write(master, b"a")
        read_screen(master, screen, stream, "auction.start")


def test_the_screens_text_is_written_out_and_a_narrow_terminal_told() -> None:
    """Braille blurred the inverted banners, the menu's footer and GAME OVER's lines; below
    80 columns the picture was cut off without a word."""
    with curses_sim(24, 80, "--seed", "2") as (master, screen):
        stream = pyte.ByteStream(screen)
        read_screen(master, screen, stream, "screen  SWITCH OFF · flip it ON · to play")
        os.write(master, b" ")
        read_screen(master, screen, stream, "screen  HOUR 1")
    with curses_sim(24, 50, "--seed", "2") as (master, screen):
        stream = pyte.ByteStream(screen)
        text = read_screen(master, screen, stream, "the screen needs 67")
        assert text.splitlines()[0].startswith(" 50 columns: the screen needs 67, widen it")


def test_a_terminal_without_utf_8_gets_the_same_screen_in_ascii() -> None:
    from cityunit_sim.terminal import ascii_line

    assert ascii_line("│" + chr(0x28FF) + chr(0x2800) + chr(0x2801) + "│") == "|# .|"
    assert ascii_line(" LED ███░░ ♪ 2093 Hz · x2") == " LED ###.. ~ 2093 Hz - x2"
    assert ascii_line("┌─ é") == "+- ?"


def test_at_speed_60_a_tap_is_a_tap_and_a_long_press_a_real_1_5_s() -> None:
    real = RealTime()
    with SimBoard(Config(), HandClock(60, real), seed=2) as board:
        term, modes = Terminal(board, speed=60), []

        def wait(ms: int) -> None:
            real.ns += ms * 1_000_000
            term.release_due()
            board.runtime.pump()
            modes.append(board.runtime.snapshot.mode)

        board.runtime.pump()
        term.key(" ")
        wait(1_000)
        assert board.clock.now_ms() == 60_000, "a minute of play in a second"
        term.key("a")
        for _ in range(4):
            wait(50)  # the terminal's own pace: the tap's 100 ms, then the debounce
        assert modes[-1] == "auction" and "settings" not in modes
        wait(2_000)  # the auction, 13 to 50 s, at x60
        term.hold(("build",), 1_600)
        wait(1_600)
        assert modes[-1] == "settings", "a real 1.6 s hold is a long press: the menu"
        wait(1_000)
        assert modes[-1] == "settings", "the menu is worked by hand: it waits in real time"
        wait(30_000)
        assert modes[-1] == "idle", "closed after 30 s untouched"
        before = board.clock.now_ms()
        wait(1_000)
        assert board.clock.now_ms() - before == 60_000, "and the game runs at x60 again"


def test_the_event_log_speaks_words_not_python() -> None:
    """It said `on=True`, `stopped=False`, `hz=None`."""
    from cityunit.core.events import Event, EventKind
    from cityunit_sim.board import event_line

    said = {
        (EventKind.POWER, (("on", True),)): "power on",
        (EventKind.AUCTION_END, (("stopped", False),)): "auction.end not stopped",
        (EventKind.TONE, (("hz", None),)): "tone silent",
        (EventKind.HOUR_WARNING, (("remaining_ms", 30_000),)): "hour.warning 30 s left",
        (EventKind.PERMIT, (("value", "station"),)): "permit station",
        (EventKind.FAULT, (("part", "display"), ("detail", "back"))): "fault display (back)",
    }
    for (kind, data), words in said.items():
        assert event_line(Event(61_500, kind, dict(data))) == f"     61.5 s  {words}"
