"""The simulator in a terminal (over SSH, in tmux): the OLED in braille, LED and tone as text.

A terminal reports keys but never their release, so a key is a press of a set length:
`a`/`b` tap, `A`/`B` hold 2 s (a long press), `p` holds both (pause), `X` holds both
for 6 s (the safe-shutdown gesture, with the switch OFF). The pins move exactly as
under a finger, so the real input path runs. It fits 80x24: a shorter terminal gets
fewer events, never fewer keys.
"""

from __future__ import annotations

import curses
import locale
import logging
import threading
from collections import deque

from PIL import Image

from cityunit.core.events import OUTPUT_CHANGES, Event
from cityunit_sim.board import SimBoard, event_line

TAP_MS, LONG_MS, PAUSE_MS, SHUTDOWN_MS = 100, 2_000, 2_000, 6_000
EVENTS = 6  # the event pane's lines, where the terminal has room
WIDE = 67  # columns the picture takes, with its frame (and curses' last column kept free)
KEYS = "a/b tap · A/B long press · p pause · space switch · X shutdown (OFF) · q quit"
# Braille cells are 2 dots wide and 4 high; bit of each dot, by (x, y) in the cell.
DOTS = {(0, 0): 0x01, (0, 1): 0x02, (0, 2): 0x04, (1, 0): 0x08,
        (1, 1): 0x10, (1, 2): 0x20, (0, 3): 0x40, (1, 3): 0x80}  # fmt: skip


def braille(image: Image.Image | None, width: int = 128, height: int = 64) -> list[str]:
    """A 1-bit image as rows of braille characters: 128x64 pixels in 64x16 cells."""
    if image is None:
        return [chr(0x2800) * (width // 2)] * (height // 4)
    one_bit = image.convert("1")
    rows = []
    for cy in range(0, height, 4):
        row = []
        for cx in range(0, width, 2):
            lit = ((dx, dy) for dx, dy in DOTS if one_bit.getpixel((cx + dx, cy + dy)))
            bits = sum(DOTS[dot] for dot in lit)
            row.append(chr(0x2800 + bits))
        rows.append("".join(row))
    return rows


# A terminal that cannot show UTF-8 (LANG=C) gets the same screen in ASCII: each braille
# cell becomes a character as dense as its dots.
ASCII = {ord(a): b for a, b in zip("┌┐└┘─│█░♪·×", "++++-|#.~-x", strict=True)}
DENSITY = " ..::::##"


def ascii_line(line: str) -> str:
    """A line of the screen for a terminal without UTF-8: each braille cell as dense as its
    dots, box and symbols by look-alikes, anything else '?'."""
    out = []
    for ch in line:
        code = ord(ch) - 0x2800
        out.append(DENSITY[bin(code).count("1")] if 0 <= code <= 0xFF else ch)
    return "".join(out).translate(ASCII).encode("ascii", "replace").decode()


def led_bar(level: float, width: int = 10) -> str:
    """The LED's level (0 to 1) as `width` cells, the lit ones first."""
    lit = round(level * width)
    return "█" * lit + "░" * (width - lit)


class Terminal:
    """The unit drawn with curses from what the loop posts; keys pressed on the pins as
    presses of set lengths."""

    def __init__(self, board: SimBoard, speed: float = 1.0, console: str | None = None) -> None:
        """`console`: the pty the console protocol is served on, shown in the header."""
        self.board = board
        self.speed = speed
        self.console = console
        self.log: deque[str] = deque(maxlen=EVENTS)
        self._releases: list[tuple[int, str]] = []
        board.runtime.on_event(self._event)

    def _event(self, event: Event) -> None:
        if event.event not in OUTPUT_CHANGES:
            self.log.append(event_line(event))

    def note(self, text: str) -> None:
        """The simulator's own word (a warning) in the event pane, marked '!'."""
        self.log.append(f"{'':>11}  ! {text}")

    def hold(self, parts: tuple[str, ...], ms: int) -> None:
        """Press parts now and release them `ms` later: unit time, which runs at real
        speed while a button is held (HandClock), so a tap stays a tap at any --speed."""
        for part in parts:
            self.board.press(part, True)
            self._releases.append((self.board.clock.now_ms() + ms, part))

    def key(self, ch: str) -> bool:
        """Act on one key; False to quit."""
        actions = {
            "a": (("auction",), TAP_MS), "b": (("build",), TAP_MS),
            "A": (("auction",), LONG_MS), "B": (("build",), LONG_MS),
            "p": (("auction", "build"), PAUSE_MS), "X": (("auction", "build"), SHUTDOWN_MS),
        }  # fmt: skip
        if ch in ("q", "\x1b"):
            return False
        if ch == " ":
            self.board.switch(self.board.pin("power").state != 0)
        elif ch in actions:
            self.hold(*actions[ch])
        return True

    def release_due(self) -> None:
        """Let go of each held button whose time has come; called each time the screen is
        drawn (about every 50 ms), so a release is up to that late."""
        now = self.board.clock.now_ms()
        for due in [r for r in self._releases if r[0] <= now]:
            self._releases.remove(due)
            self.board.press(due[1], False)

    def lines(self, rows: int = 27, columns: int = 80) -> list[str]:
        """Everything on the terminal, top to bottom, in at most `rows` lines: the events
        get what the rest leaves (6 at most), and the keys always show. The screen's text
        is written out under the picture (braille blurs inverted banners and small
        print); a terminal narrower than the picture is told so, first."""
        board, snapshot = self.board, self.board.runtime.snapshot  # posted by the loop thread
        led = float(board.pin("led").state or 0.0)
        hz = (
            board.pin("buzzer").frequency
            if board.config.hardware.buzzer_kind == "passive"
            else None
        )
        power = "ON" if board.pin("power").state == 0 else "OFF"
        now_ms = board.clock.now_ms()
        now, elapsed = now_ms // 1000, snapshot.clock.elapsed(now_ms) // 1000
        oled = braille(board.oled_image)
        title = "┌─ MONOPOLY CITY unit " + (f"· console {self.console} " if self.console else "")
        out = [title + "─" * max(1, 65 - len(title)) + "┐"]
        if columns < WIDE:
            out.insert(0, f" {columns} columns: the screen needs {WIDE}, widen it")
        out += [f"│{row}│" for row in oled]
        out.append("└" + "─" * 64 + "┘")
        text = snapshot.picture.screen.lines(snapshot.picture.language)
        out.append(f" screen  {' · '.join(text) or '(dark)'}")
        out.append(
            f" LED {led_bar(led)} {led * 100:3.0f}%   buzzer "
            f"{f'♪ {hz:.0f} Hz' if hz else 'silent':<10}   switch {power}"
        )
        speed = f" ×{self.speed:g}" if self.speed != 1 else ""
        out.append(
            f" unit time {now // 3600}:{now // 60 % 60:02d}:{now % 60:02d}{speed}"
            f"   hour {snapshot.hour or '-'} {elapsed // 60:02d}:{elapsed % 60:02d}"
            f"   mode {snapshot.mode}{'  PAUSED' if snapshot.paused else ''}"
        )
        events = [" " + line for line in reversed(list(self.log))]  # appended by the loop
        out += (events + [""] * EVENTS)[: min(EVENTS, rows - len(out) - 1)]
        return [*out[: rows - 1], " " + KEYS]

    def run(self) -> int:
        """The terminal is the unit's until `q` or Esc (or the loop ends), the loop on a
        thread of its own; meanwhile log lines go to the event pane."""
        locale.setlocale(locale.LC_ALL, "")
        # Log lines on stderr would scribble over the screen: warnings go to the event pane.
        root = logging.getLogger()
        saved = root.handlers[:]
        root.handlers = [_PaneHandler(self)]
        try:
            return curses.wrapper(self._main)
        finally:
            root.handlers = saved

    def _main(self, screen: curses.window) -> int:
        # What curses can draw is the C library's codeset (Python's own UTF-8 mode aside).
        plain = locale.nl_langinfo(locale.CODESET).lower().replace("-", "") != "utf8"
        curses.curs_set(0)
        screen.timeout(50)
        runtime = self.board.runtime
        loop = threading.Thread(target=runtime.run, name="unit-loop", daemon=True)
        loop.start()
        try:
            while loop.is_alive():
                self.release_due()
                screen.erase()
                height, width = screen.getmaxyx()
                for y, line in enumerate(self.lines(height, width)):
                    screen.addstr(y, 0, (ascii_line(line) if plain else line)[: width - 1])
                screen.refresh()
                try:
                    ch = screen.get_wch()
                except curses.error:
                    continue
                if isinstance(ch, str) and not self.key(ch):
                    break
        finally:
            runtime.stop()
            loop.join(timeout=5)
        return 0


class _PaneHandler(logging.Handler):
    def __init__(self, terminal: Terminal) -> None:
        super().__init__(logging.WARNING)
        self.terminal = terminal

    def emit(self, record: logging.LogRecord) -> None:
        self.terminal.note(record.getMessage())
