"""A drawing of the unit, from the simulated board's real pin states and OLED image.

Round body with the red light glowing around it, the OLED at three times its size with
its pixels visible, the AUCTION and BUILD buttons, the ON/OFF switch, and below them
the unit's clock and its latest events. Everything shown is read from the board: the
LED pin's level, the buzzer pin's frequency, the luma dummy device's image.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import pygame

from cityunit.events import OUTPUT_CHANGES, Event
from cityunit.render import FONTS, HEIGHT, WIDTH
from cityunit_sim.board import SimBoard, event_line

SIZE = (640, 800)
CENTER = (320, 330)
RADIUS = 262
SCALE = 3
OLED_AT = (CENTER[0] - WIDTH * SCALE // 2, 176)
LED_AT = (320, 112)
TONE_AT = (520, 622)  # a fixed place, clear of the longest clock line

BG = (28, 31, 36)
BODY = (232, 228, 220)
RIM = (160, 28, 28)
INK = (40, 40, 44)
DIM = (150, 155, 165)
OLED_ON = (190, 232, 255)
OLED_OFF = (6, 10, 14)

KEYS = "A auction · B build · Space switch · hold for a long press · A+B pause · Esc quits"


@dataclass(frozen=True)
class Control:
    """A button on the drawing: where it is, its colour, and its label in each language."""

    name: str  # the board part it drives: 'auction', 'build' or 'power'
    center: tuple[int, int]
    radius: int
    color: tuple[int, int, int]
    label: dict[str, str]


BUTTONS = (
    Control("auction", (215, 462), 44, (206, 58, 44), {"en": "AUCTION", "fr": "ENCHÈRES"}),
    Control("build", (425, 462), 44, (44, 150, 80), {"en": "BUILD", "fr": "CONSTRUCTION"}),
)
SWITCH = pygame.Rect(272, 548, 96, 34)


def _font(size: int) -> pygame.font.Font:
    return pygame.font.Font(str(FONTS / "DejaVuSans-Bold.ttf"), size)


class UnitView:
    """The unit drawn on `surface`, at SIZE, from the board and the snapshot the loop
    posts; the events' pane is filled by the loop, as a runtime listener."""

    def __init__(self, board: SimBoard, surface: pygame.Surface, speed: float = 1.0) -> None:
        self.board = board
        self.surface = surface
        self.speed = speed
        self.lang = board.config.rules.language
        self.log: deque[str] = deque(maxlen=6)
        board.runtime.on_event(self._event)
        self._small, self._label, self._mono = _font(13), _font(15), _font(14)
        self._grid = self._pixel_grid()
        self._glow = [self._glow_ring(i / 10) for i in range(11)]

    def _event(self, event: Event) -> None:
        if event.event not in OUTPUT_CHANGES:
            self.log.append(event_line(event))

    # ----- what is where -------------------------------------------------------------

    def hit(self, pos: tuple[int, int]) -> str | None:
        """The part under a mouse position, if any."""
        for b in BUTTONS:
            if math.dist(pos, b.center) <= b.radius:
                return b.name
        if SWITCH.inflate(16, 16).collidepoint(pos):
            return "power"
        return None

    @staticmethod
    def oled_rect() -> pygame.Rect:
        """Where the OLED sits in the drawing, at SCALE times its size."""
        return pygame.Rect(OLED_AT, (WIDTH * SCALE, HEIGHT * SCALE))

    # ----- drawing -------------------------------------------------------------------

    def paint(self, now_ms: int) -> None:
        """The whole unit, with `now_ms` (unit time) for the clock line."""
        s = self.surface
        s.fill(BG)
        led = float(self.board.pin("led").state or 0.0)
        s.blit(self._glow[round(led * 10)], (0, 0))
        pygame.draw.circle(s, RIM, CENTER, RADIUS + 8)
        pygame.draw.circle(s, BODY, CENTER, RADIUS)
        self._led(led)
        self._oled()
        for b in BUTTONS:
            self._button(b)
        self._switch()
        self._panel(now_ms)

    def _glow_ring(self, level: float) -> pygame.Surface:
        ring = pygame.Surface(SIZE, pygame.SRCALPHA)
        if level > 0:
            for i in range(30, 0, -2):
                alpha = int(level * 150 * (1 - i / 30) ** 1.5)
                pygame.draw.circle(ring, (255, 40, 30, alpha), CENTER, RADIUS + 8 + i)
        return ring

    def _led(self, level: float) -> None:
        r, g, b = 90 + int(165 * level), 16 + int(40 * level), 16 + int(30 * level)
        pygame.draw.circle(self.surface, (60, 20, 20), LED_AT, 16)
        pygame.draw.circle(self.surface, (r, g, b), LED_AT, 12)
        if level > 0.05:
            pygame.draw.circle(self.surface, (255, 200, 190), (LED_AT[0] - 4, LED_AT[1] - 4), 3)

    def _pixel_grid(self) -> pygame.Surface:
        """Dark lines between the OLED's pixels, so each one shows."""
        grid = pygame.Surface((WIDTH * SCALE, HEIGHT * SCALE), pygame.SRCALPHA)
        for x in range(0, WIDTH * SCALE, SCALE):
            pygame.draw.line(grid, (0, 0, 0, 110), (x, 0), (x, HEIGHT * SCALE))
        for y in range(0, HEIGHT * SCALE, SCALE):
            pygame.draw.line(grid, (0, 0, 0, 110), (0, y), (WIDTH * SCALE, y))
        return grid

    def oled_surface(self) -> pygame.Surface:
        """The OLED's image exactly as the firmware sent it, one colour per lit pixel."""
        image = self.board.oled_image
        small = pygame.Surface((WIDTH, HEIGHT))
        small.fill(OLED_OFF)
        if image is not None:
            lit = pygame.image.frombuffer(image.convert("L").tobytes(), (WIDTH, HEIGHT), "P")
            lit.set_palette([OLED_OFF] + [OLED_ON] * 255)
            small.blit(lit, (0, 0))
        return small

    def _oled(self) -> None:
        rect = self.oled_rect()
        pygame.draw.rect(self.surface, (18, 18, 22), rect.inflate(26, 26), border_radius=10)
        self.surface.blit(pygame.transform.scale(self.oled_surface(), rect.size), rect)
        self.surface.blit(self._grid, rect)

    def _button(self, b: Control) -> None:
        down = self.board.pin(b.name).state == 0  # buttons pull the pin low
        x, y = b.center
        pygame.draw.circle(self.surface, (90, 90, 96), (x, y + 5), b.radius + 4)
        color = tuple(int(c * 0.7) for c in b.color) if down else b.color
        pygame.draw.circle(self.surface, color, (x, y + (3 if down else 0)), b.radius)
        pygame.draw.circle(self.surface, (255, 255, 255), (x, y + (3 if down else 0)), b.radius, 2)
        text = self._label.render(b.label[self.lang], True, INK)
        self.surface.blit(text, text.get_rect(center=(x, y + b.radius + 22)))

    def _switch(self) -> None:
        on = self.board.pin("power").state == 0
        pygame.draw.rect(self.surface, (70, 70, 76), SWITCH, border_radius=17)
        knob = pygame.Rect(0, 0, 44, 28)
        knob.center = (
            (SWITCH.right - 25, SWITCH.centery) if on else (SWITCH.left + 25, SWITCH.centery)
        )
        pygame.draw.rect(
            self.surface, (90, 200, 110) if on else (200, 200, 205), knob, border_radius=14
        )
        words = {"en": ("OFF", "ON"), "fr": ("ARRÊT", "MARCHE")}[self.lang]
        for word, side, lit in ((words[0], -1, not on), (words[1], 1, on)):
            text = self._small.render(word, True, INK if lit else DIM)
            x = SWITCH.left - 12 - text.get_width() if side < 0 else SWITCH.right + 12
            self.surface.blit(text, (x, SWITCH.centery - text.get_height() // 2))

    def _note(self, at: tuple[int, int], color: tuple[int, int, int]) -> None:
        """A quaver, drawn: the bundled font has no ♪."""
        x, y = at
        pygame.draw.ellipse(self.surface, color, (x, y + 10, 8, 6))
        pygame.draw.line(self.surface, color, (x + 7, y + 12), (x + 7, y + 1), 2)
        pygame.draw.line(self.surface, color, (x + 7, y + 1), (x + 11, y + 6), 2)

    def _panel(self, now_ms: int) -> None:
        snapshot = self.board.runtime.snapshot  # posted by the loop thread
        seconds = now_ms // 1000
        clock = f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        hz = (
            self.board.pin("buzzer").frequency
            if self.board.config.hardware.buzzer == "passive"
            else None
        )
        speed = f"  ×{self.speed:g}" if self.speed != 1 else ""
        elapsed = snapshot.clock.elapsed(now_ms) // 1000
        hour = f"hour {snapshot.hour or '-'} {elapsed // 60:02d}:{elapsed % 60:02d}"
        bright = (220, 225, 235)
        text = f"unit time {clock}{speed}   {hour}   {snapshot.mode}"
        self.surface.blit(self._mono.render(text, True, bright), (18, 622))
        if hz:
            self._note(TONE_AT, bright)
        tone = self._mono.render(f"{hz:.0f} Hz" if hz else "silent", True, bright)
        self.surface.blit(tone, (TONE_AT[0] + 16, TONE_AT[1]))
        y = 643
        for line in reversed(list(self.log)):  # appended by the loop
            self.surface.blit(self._mono.render(line, True, DIM), (18, y))
            y += 21
        help_text = self._small.render(KEYS, True, (120, 125, 135))
        self.surface.blit(help_text, help_text.get_rect(center=(SIZE[0] // 2, SIZE[1] - 16)))
