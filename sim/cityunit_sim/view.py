"""A drawing of the unit, from the simulated board's real pin states and OLED image.

The case as printed (its red lid, the toggle switch in the side wall), with the red
light glowing around it, the OLED at three times its size with its pixels visible, the
AUCTION and BUILD buttons, and below them the unit's clock and its latest events.
Everything shown is read from the board: the LED pin's level, the buzzer pin's
frequency, the luma dummy device's image.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import pygame

from cityunit.core.events import OUTPUT_CHANGES, Event
from cityunit.display.render import FONTS, HEIGHT, WIDTH
from cityunit_sim.board import SimBoard, event_line

# The case as printed, from hardware/enclosure/cityunit.scad (mm from the lid's centre,
# y up; tests/system/test_sim_window.py holds these to the model): a red lid, the buttons, the
# LED and the buzzer's holes where the lid has them, three lid screws, and the toggle
# switch in the side wall. Only the OLED is drawn larger than life, 3 pixels a pixel,
# so that it reads as well as the real one does at arm's length.
DIAMETER_MM = 110
BUTTONS_MM = {"auction": (-25, -26), "build": (25, -26)}
BUTTON_CAP_MM = 19
LED_MM, LED_D_MM = (0, 38), 5.2
BUZZER_MM = (0, -40)  # seven 2 mm holes: one in the middle, six on a 3.5 mm circle
OLED_MM = 14 + 1.5  # the active area's centre: the module's, and 1.5 mm above it
SCREWS_DEG, SCREW_MM = (100, 210, 330), DIAMETER_MM / 2 - 2.4 - 3.5
# the switch's bushing comes out of the -x wall at y = 0: its nut, thread and lever
# (the model's lever is the room it may take, 20 mm straight out; drawn as a real one leans)
NUT_MM, BUSHING_MM, LEVER_MM, LEAN_DEG = (2, 11), (3, 6), 9, 30

SIZE = (640, 800)
MM = 5  # drawing pixels a millimetre
CENTER = (345, 320)  # right of the middle: the switch's lever sticks out on the left
RADIUS = DIAMETER_MM * MM // 2
SCALE = 3
OLED_AT = (CENTER[0] - WIDTH * SCALE // 2, CENTER[1] - round(OLED_MM * MM) - HEIGHT * SCALE // 2)
TONE_AT = (520, 622)  # a fixed place, clear of the longest clock line
GLOW = 20  # the light's glow around the case, wide
BEZEL = 1  # the lid's window around the OLED, wide

BG = (28, 31, 36)
LID = (178, 34, 34)  # the model's "firebrick"
EDGE = (120, 20, 20)
PART = (105, 105, 105)  # "dimgray": the switch, as the model draws it
INK = (250, 236, 230)  # on the lid
DIM = (150, 155, 165)
OLED_ON = (190, 232, 255)
OLED_OFF = (6, 10, 14)


def at(mm: tuple[float, float]) -> tuple[int, int]:
    """A point of the case (mm, y up) in the drawing (pixels, y down)."""
    return CENTER[0] + round(mm[0] * MM), CENTER[1] - round(mm[1] * MM)


KEYS = "A auction · B build · Space switch · hold for a long press · A+B pause · Esc quits"


@dataclass(frozen=True)
class Control:
    """A button on the drawing: where it is, its colour, and its label in each language."""

    name: str  # the board part it drives: 'auction', 'build' or 'power'
    center: tuple[int, int]
    radius: int
    color: tuple[int, int, int]
    label: dict[str, str]


BUTTONS = tuple(
    Control(name, at(BUTTONS_MM[name]), BUTTON_CAP_MM * MM // 2, color, label)
    for name, color, label in (
        ("auction", (206, 58, 44), {"en": "AUCTION", "fr": "ENCHÈRES"}),
        ("build", (44, 150, 80), {"en": "BUILD", "fr": "CONSTRUCTION"}),
    )
)
WALL_X = CENTER[0] - RADIUS
SWITCH = pygame.Rect(0, CENTER[1] - 60, WALL_X, 120)  # where a click flips it: off the lid


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
        if SWITCH.collidepoint(pos):
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
        pygame.draw.circle(s, EDGE, CENTER, RADIUS)
        pygame.draw.circle(s, LID, CENTER, RADIUS - 3)
        for angle in SCREWS_DEG:
            self._screw(angle)
        self._led(led)
        self._buzzer()
        self._oled()
        for b in BUTTONS:
            self._button(b)
        self._switch()
        self._panel(now_ms)

    def _glow_ring(self, level: float) -> pygame.Surface:
        ring = pygame.Surface(SIZE, pygame.SRCALPHA)
        if level > 0:
            for i in range(GLOW, 0, -2):
                alpha = int(level * 150 * (1 - i / GLOW) ** 1.5)
                pygame.draw.circle(ring, (255, 40, 30, alpha), CENTER, RADIUS + i)
        return ring

    def _screw(self, angle: float) -> None:
        """An M3 lid screw's head, slotted, where the model's bosses are."""
        a = math.radians(angle)
        x, y = at((SCREW_MM * math.cos(a), SCREW_MM * math.sin(a)))
        pygame.draw.circle(self.surface, (70, 70, 74), (x, y), 11)
        pygame.draw.circle(self.surface, (150, 150, 156), (x, y), 9)
        pygame.draw.line(self.surface, (70, 70, 74), (x - 6, y + 4), (x + 6, y - 4), 3)

    def _led(self, level: float) -> None:
        r, g, b = 90 + int(165 * level), 16 + int(40 * level), 16 + int(30 * level)
        x, y = at(LED_MM)
        radius = round(LED_D_MM * MM / 2)
        pygame.draw.circle(self.surface, (60, 16, 16), (x, y), radius + 1)
        pygame.draw.circle(self.surface, (r, g, b), (x, y), radius)
        if level > 0.05:
            pygame.draw.circle(self.surface, (255, 200, 190), (x - 4, y - 4), 3)

    def _buzzer(self) -> None:
        """The seven holes over the buzzer."""
        x, y = at(BUZZER_MM)
        holes = [(0.0, 0.0)] + [
            (3.5 * math.cos(math.radians(a)), 3.5 * math.sin(math.radians(a)))
            for a in range(0, 360, 60)
        ]
        for dx, dy in holes:
            pygame.draw.circle(
                self.surface, (40, 8, 8), (x + round(dx * MM), y - round(dy * MM)), 5
            )

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
        """Behind the lid's window, whose edges open out at 45 degrees."""
        rect = self.oled_rect()
        pygame.draw.rect(self.surface, (96, 16, 16), rect.inflate(2 * BEZEL, 2 * BEZEL))
        self.surface.blit(pygame.transform.scale(self.oled_surface(), rect.size), rect)
        self.surface.blit(self._grid, rect)

    def _button(self, b: Control) -> None:
        down = self.board.pin(b.name).state == 0  # buttons pull the pin low
        x, y = b.center
        pygame.draw.circle(self.surface, (60, 12, 12), (x, y + 5), b.radius + 3)
        color = tuple(int(c * 0.7) for c in b.color) if down else b.color
        pygame.draw.circle(self.surface, color, (x, y + (3 if down else 0)), b.radius)
        pygame.draw.circle(self.surface, (255, 255, 255), (x, y + (3 if down else 0)), b.radius, 2)
        text = self._label.render(b.label[self.lang], True, INK)
        self.surface.blit(text, text.get_rect(center=(x, y + b.radius + 20)))

    def _switch(self) -> None:
        """The toggle seen from above, out of the side wall: its nut, its thread, and the
        lever leaning towards ON (up) or OFF (down), each word beside its way."""
        on = self.board.pin("power").state == 0
        y = CENTER[1]
        nut_w, nut_h = NUT_MM[0] * MM, NUT_MM[1] * MM
        thread_w, thread_h = BUSHING_MM[0] * MM, BUSHING_MM[1] * MM
        nut = pygame.Rect(WALL_X - nut_w, y - nut_h // 2, nut_w, nut_h)
        thread = pygame.Rect(nut.left - thread_w, y - thread_h // 2, thread_w, thread_h)
        pygame.draw.rect(self.surface, PART, nut)
        pygame.draw.rect(self.surface, (140, 140, 146), thread)
        lean = math.radians(LEAN_DEG)
        end = (
            thread.left - round(LEVER_MM * MM * math.cos(lean)),
            y + round(LEVER_MM * MM * math.sin(lean)) * (-1 if on else 1),
        )
        pygame.draw.line(self.surface, (190, 190, 196), (thread.left, y), end, 7)
        pygame.draw.circle(self.surface, (210, 210, 216), end, 5)
        words = {"en": ("OFF", "ON"), "fr": ("ARRÊT", "MARCHE")}[self.lang]
        for word, side, lit in ((words[0], 1, not on), (words[1], -1, on)):
            text = self._small.render(word, True, (235, 235, 240) if lit else DIM)
            self.surface.blit(text, (6, y + side * 42 - text.get_height() // 2))

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
            if self.board.config.hardware.buzzer_kind == "passive"
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
