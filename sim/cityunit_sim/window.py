"""The simulator's window: pygame owns the main thread, the firmware's loop runs beside it.

Clicks and keys move the board's mock pins, so every press goes through the real
input path (debouncing, gestures). The unit is drawn at one size and scaled to the
window, which opens to fit the screen and can be resized. `--record` saves what the
window shows, at the drawn size; `--demo` plays a scripted auction and two permit draws
on the virtual clock, the way the README's recording was made.
"""

from __future__ import annotations

import itertools
import logging
import math
import threading
from collections.abc import Iterator
from pathlib import Path

import pygame
from PIL import Image

from cityunit.core.events import EventKind
from cityunit.loop.clock import VirtualClock
from cityunit_sim.board import SimBoard
from cityunit_sim.sound import Speaker
from cityunit_sim.view import BG, SIZE, UnitView

log = logging.getLogger(__name__)

FPS = 30
KEY_PARTS = {pygame.K_a: "auction", pygame.K_b: "build"}
MARGIN = (40, 100)  # room left on the screen for a title bar, a panel, a dock


def fit(room: tuple[int, int], most: float = math.inf) -> tuple[int, int]:
    """The largest size of the drawing, its shape kept, within `room`, at most `most`x."""
    scale = min(room[0] / SIZE[0], room[1] / SIZE[1], most)
    return max(1, round(SIZE[0] * scale)), max(1, round(SIZE[1] * scale))


class Recorder:
    """Frames of the window at most every `every_ms` of unit time, to a GIF or PNG files."""

    def __init__(self, path: Path, every_ms: int = 100) -> None:
        self.path = path
        self.every_ms = every_ms
        self.frames: list[tuple[int, Image.Image]] = []

    def add(self, surface: pygame.Surface, now_ms: int) -> None:
        """A copy of `surface`, unless the last frame kept is under `every_ms` old."""
        if self.frames and now_ms - self.frames[-1][0] < self.every_ms:
            return
        data = pygame.image.tobytes(surface, "RGB")
        self.frames.append((now_ms, Image.frombytes("RGB", surface.get_size(), data)))

    def save(self) -> None:
        """A GIF at half size, each frame as long as it lasted and the last for 2 s; any
        other `path` is a directory of numbered PNGs at full size. Nothing if no frames."""
        if not self.frames:
            return
        times = [t for t, _ in self.frames]
        images = [image for _, image in self.frames]
        if self.path.suffix.lower() == ".gif":
            durations = [max(20, b - a) for a, b in itertools.pairwise(times)] + [2000]
            small = [
                i.resize((i.width // 2, i.height // 2), Image.Resampling.LANCZOS) for i in images
            ]
            small[0].save(
                self.path, save_all=True, append_images=small[1:], duration=durations, loop=0
            )
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            for n, image in enumerate(images):
                image.save(self.path / f"frame-{n:05d}.png")
        log.info("recorded %d frames to %s", len(images), self.path)


class Window:
    """The simulator on the desktop: pygame's window on the main thread, sized to fit the
    screen; clicks and keys move the board's pins."""

    def __init__(self, board: SimBoard, speed: float = 1.0, record: Path | None = None) -> None:
        pygame.display.init()
        pygame.font.init()
        screen = pygame.display.get_desktop_sizes()[0]
        room = (screen[0] - MARGIN[0], screen[1] - MARGIN[1])
        pygame.display.set_mode(fit(room, most=1), pygame.RESIZABLE)
        pygame.display.set_caption("cityunit: the MONOPOLY CITY unit, simulated")
        self.surface = pygame.Surface(SIZE)  # the drawing, at its own size
        self.board = board
        self.view = UnitView(board, self.surface, speed)
        self.recorder = Recorder(record) if record else None
        self._mouse: str | None = None

    def press(self, part: str, down: bool) -> None:
        """A button down or up, through its pin (held in real time on a HandClock)."""
        self.board.press(part, down)

    def toggle_switch(self) -> None:
        """The switch flipped: its pin moved, as a hand would."""
        self.board.switch(self.board.pin("power").state != 0)

    def placed(self) -> pygame.Rect:
        """Where the drawing goes in the window: scaled to fit, centred."""
        screen = pygame.display.get_surface().get_rect()
        rect = pygame.Rect((0, 0), fit(screen.size))
        rect.center = screen.center
        return rect

    def in_drawing(self, pos: tuple[int, int]) -> tuple[int, int]:
        """A window position as a position in the drawing."""
        rect = self.placed()
        return ((pos[0] - rect.x) * SIZE[0] // rect.w, (pos[1] - rect.y) * SIZE[1] // rect.h)

    def handle(self, event: pygame.event.Event) -> bool:
        """One window event; False when the person asked to quit."""
        if event.type == pygame.QUIT:
            return False
        if event.type == pygame.KEYDOWN:
            if event.key in (pygame.K_ESCAPE, pygame.K_q):
                return False
            if event.key in KEY_PARTS:
                self.press(KEY_PARTS[event.key], True)
            elif event.key == pygame.K_SPACE:
                self.toggle_switch()
        elif event.type == pygame.KEYUP and event.key in KEY_PARTS:
            self.press(KEY_PARTS[event.key], False)
        elif event.type == pygame.VIDEORESIZE:
            if pygame.display.get_surface().get_size() != event.size:  # pygame 2 resized it
                pygame.display.set_mode(event.size, pygame.RESIZABLE)
        elif event.type == pygame.MOUSEBUTTONDOWN and event.button == 1:
            part = self.view.hit(self.in_drawing(event.pos))
            if part == "power":
                self.toggle_switch()
            elif part is not None:
                self._mouse = part
                self.press(part, True)
        elif event.type == pygame.MOUSEBUTTONUP and event.button == 1 and self._mouse:
            self.press(self._mouse, False)
            self._mouse = None
        return True

    def frame(self) -> None:
        """The unit drawn once, scaled to the window; recorded at the drawn size, if asked."""
        now = self.board.runtime.clock.now_ms()
        self.view.paint(now)
        screen, rect = pygame.display.get_surface(), self.placed()
        screen.fill(BG)
        drawing = self.surface
        if rect.size != SIZE:
            drawing = pygame.transform.smoothscale(drawing, rect.size)
        screen.blit(drawing, rect)
        pygame.display.flip()
        if self.recorder is not None:
            self.recorder.add(self.surface, now)

    def run(self) -> int:
        """Play until the window closes; the firmware's loop runs on its own thread."""
        runtime = self.board.runtime
        speaker = Speaker()
        runtime.on_event(speaker.on_event)
        loop = threading.Thread(target=runtime.run, name="unit-loop", daemon=True)
        loop.start()
        ticker = pygame.time.Clock()
        try:
            while loop.is_alive() and all(self.handle(e) for e in pygame.event.get()):
                self.frame()
                ticker.tick(FPS)
        finally:
            runtime.stop()
            loop.join(timeout=5)
            if self.recorder is not None:
                self.recorder.save()
            pygame.quit()
        return 0


# ----- the scripted demo ------------------------------------------------------------------

DEMO: list[tuple[str | int, ...]] = [
    ("wait", 800),
    ("switch",),
    ("wait", 1800),
    ("press", "auction", 120),
    ("until", EventKind.AUCTION_END),
    ("wait", 3200),
    ("press", "build", 120),
    ("wait", 2600),
    ("press", "build", 120),
    ("wait", 3000),
]


def run_demo(window: Window, step_ms: int = 50) -> int:
    """Play DEMO on the virtual clock, drawing (and recording) a frame every `step_ms`."""
    board = window.board
    clock = board.runtime.clock
    assert isinstance(clock, VirtualClock), "the demo runs on the virtual clock"
    seen: list[str] = []
    board.runtime.on_event(lambda e: seen.append(e.event))

    def ticks(ms: int) -> Iterator[None]:
        end = clock.now_ms() + ms
        while clock.now_ms() < end:
            clock.set_ms(min(end, clock.now_ms() + step_ms))
            board.runtime.pump()
            window.frame()
            yield

    board.runtime.pump()
    for step in DEMO:
        match step:
            case ("wait", int(ms)):
                for _ in ticks(ms):
                    pass
            case ("switch",):
                window.toggle_switch()
            case ("press", str(part), int(hold)):
                window.press(part, True)
                for _ in ticks(hold):
                    pass
                window.press(part, False)
            case ("until", str(event)):
                for _ in ticks(120_000):
                    if event in seen:
                        break
    if window.recorder is not None:
        window.recorder.save()
    pygame.quit()
    return 0
