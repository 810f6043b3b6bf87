"""The simulator's window, headless (SDL's dummy drivers): clicks in, pixels out."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path

import pygame
import pytest
from PIL import Image

from cityunit.config import Config
from cityunit.core.events import Event, EventKind
from cityunit.display.render import HEIGHT, WIDTH
from cityunit.loop.clock import Clock, VirtualClock
from cityunit_sim.board import SimBoard
from cityunit_sim.clock import HandClock
from cityunit_sim.sound import Speaker
from cityunit_sim.view import BUTTONS, CENTER, LID, RADIUS, SCALE, SIZE, SWITCH, TONE_AT, UnitView
from cityunit_sim.window import Window, fit, run_demo
from fakes import RealTime

assert os.environ["SDL_VIDEODRIVER"] == "dummy"  # set by tests/conftest.py
REAL = RealTime()  # a HandClock's real time, moved by Play.wait


class Play:
    """A window on a virtual clock: the test moves time and clicks, then looks."""

    def __init__(self, record: Path | None = None, clock: Clock | None = None) -> None:
        self.board = SimBoard(Config(), clock or VirtualClock(), seed=4)
        self.window = Window(self.board, record=record)
        self.clock = self.board.runtime.clock
        self.board.runtime.pump()

    def wait(self, ms: int) -> Play:
        if isinstance(self.clock, VirtualClock):
            self.clock.set_ms(self.clock.now_ms() + ms)
        else:
            REAL.ns += ms * 1_000_000
        self.board.runtime.pump()
        self.window.frame()
        return self

    def mouse(self, pos: tuple[int, int], down: bool) -> Play:
        """A click at `pos` in the drawing, wherever the window shows it."""
        rect = self.window.placed()
        at = (rect.x + pos[0] * rect.w // SIZE[0], rect.y + pos[1] * rect.h // SIZE[1])
        kind = pygame.MOUSEBUTTONDOWN if down else pygame.MOUSEBUTTONUP
        assert self.window.handle(pygame.event.Event(kind, pos=at, button=1))
        return self.wait(0)

    def click(self, pos: tuple[int, int], hold_ms: int = 100) -> Play:
        self.mouse(pos, True).wait(hold_ms)
        return self.mouse(pos, False)

    def key(self, key: int, down: bool) -> Play:
        kind = pygame.KEYDOWN if down else pygame.KEYUP
        assert self.window.handle(pygame.event.Event(kind, key=key))
        return self.wait(0)

    def pixel(self, pos: tuple[int, int]) -> tuple[int, int, int]:
        return tuple(self.window.surface.get_at(pos))[:3]

    def __enter__(self) -> Play:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.board.close()
        pygame.quit()


@pytest.fixture
def play() -> Iterator[Play]:
    with Play() as p:
        yield p


AUCTION = next(b.center for b in BUTTONS if b.name == "auction")
BUILD = next(b.center for b in BUTTONS if b.name == "build")
GLOW = (CENTER[0], CENTER[1] + RADIUS + 6)  # just outside the lid, below it


def test_clicking_the_switch_and_a_button_goes_through_the_real_input_path(play: Play) -> None:
    play.click(SWITCH.center)
    assert play.board.runtime.snapshot.power
    play.click(AUCTION).wait(200)
    assert play.board.runtime.snapshot.mode == "auction"
    assert play.board.pin("auction").state == 1, "released"


def test_the_led_glow_shows_during_an_auction_and_not_before(play: Play) -> None:
    play.click(SWITCH.center).wait(1_000)
    dark = play.pixel(GLOW)
    play.click(AUCTION)
    lit = None
    for _ in range(20):
        play.wait(100)
        if play.board.pin("led").state == 1.0:
            lit = play.pixel(GLOW)
            break
    assert lit is not None
    assert lit[0] > dark[0] + 40, (dark, lit)


def test_the_oled_region_is_exactly_the_firmware_image(play: Play) -> None:
    play.click(SWITCH.center).click(BUILD).wait(2_000)
    firmware = play.board.oled_image
    assert firmware is not None and play.board.runtime.snapshot.permit is not None
    rect = UnitView.oled_rect()
    shown = Image.new("1", (WIDTH, HEIGHT))
    for y in range(HEIGHT):
        for x in range(WIDTH):
            # the middle of each 3x3 cell, clear of the pixel grid lines
            r, g, b, _ = play.window.surface.get_at(
                (rect.x + x * SCALE + 1, rect.y + y * SCALE + 1)
            )
            shown.putpixel((x, y), 1 if r + g + b > 300 else 0)
    assert shown.tobytes() == firmware.convert("1").tobytes()


def test_a_held_key_is_a_long_press(play: Play) -> None:
    play.key(pygame.K_SPACE, True)
    play.key(pygame.K_a, True).wait(2_000).key(pygame.K_a, False).wait(100)
    assert play.board.runtime.snapshot.mode == "idle", "a long press starts no auction"
    play.key(pygame.K_b, True).wait(80).key(pygame.K_b, False).wait(1_000)
    assert play.board.runtime.snapshot.mode == "permit"


def test_both_keys_held_pause_the_game(play: Play) -> None:
    play.key(pygame.K_SPACE, True).wait(1_000)
    play.key(pygame.K_a, True).key(pygame.K_b, True).wait(1_600)
    play.key(pygame.K_a, False).key(pygame.K_b, False)
    assert play.board.runtime.snapshot.paused


def test_at_speed_60_a_key_tap_is_a_tap_and_a_real_hold_a_long_press() -> None:
    with Play(clock=HandClock(60, REAL)) as play:
        play.key(pygame.K_SPACE, True).wait(1_000)
        play.key(pygame.K_b, True).wait(100).key(pygame.K_b, False).wait(50)
        assert play.board.runtime.snapshot.mode == "permit"
        play.wait(1_000)  # the permit's 20 s
        play.key(pygame.K_b, True).wait(1_600).key(pygame.K_b, False).wait(1_000)
        assert play.board.runtime.snapshot.mode == "settings"


def test_the_window_opens_to_fit_the_screen_and_scales_when_resized(play: Play) -> None:
    assert fit((1366 - 40, 768 - 100), most=1) == (534, 668), "the footer is on screen"
    assert fit((1920, 1200), most=1) == SIZE, "never blown up at first"
    assert pygame.display.get_surface().get_size() == fit((1024 - 40, 768 - 100), most=1)
    play.window.handle(pygame.event.Event(pygame.VIDEORESIZE, size=(900, 400), w=900, h=400))
    play.click(SWITCH.center).click(BUILD).wait(0)
    assert play.board.runtime.snapshot.mode == "permit", "clicks land on the scaled buttons"
    screen = pygame.display.get_surface()
    assert screen.get_size() == (900, 400) and play.window.placed() == (290, 0, 320, 400)
    assert tuple(screen.get_at((450, 205)))[:3] == LID, "(320, 410) drawn, at half size"
    assert tuple(screen.get_at((10, 200)))[:3] == tuple(screen.get_at((890, 200)))[:3]


def test_the_note_before_the_tone_is_drawn(play: Play) -> None:
    """(The bundled font has no ♪: as a character it showed blank.)"""

    def lit() -> bool:
        x, y = TONE_AT
        return any(play.pixel((x + dx, y + dy))[0] > 150 for dx in range(14) for dy in range(18))

    assert not lit(), "silent"
    play.click(SWITCH.center)  # the power-on tune
    assert play.board.pin("buzzer").frequency and lit()


def test_escape_and_closing_the_window_quit(play: Play) -> None:
    assert not play.window.handle(pygame.event.Event(pygame.KEYDOWN, key=pygame.K_ESCAPE))
    assert not play.window.handle(pygame.event.Event(pygame.QUIT))


def test_a_recording_holds_the_frames_with_their_timing(tmp_path: Path) -> None:
    out = tmp_path / "run.gif"
    with Play(record=out) as play:
        play.click(SWITCH.center)
        for _ in range(30):
            play.wait(50)
        assert play.window.recorder is not None
        play.window.recorder.save()
    gif = Image.open(out)
    assert gif.size == (320, 400) and gif.n_frames >= 2


def test_a_recording_can_be_a_folder_of_png_frames(tmp_path: Path) -> None:
    frames = tmp_path / "frames"
    with Play(record=frames) as play:
        for _ in range(5):
            play.wait(100)
        assert play.window.recorder is not None
        play.window.recorder.save()
    assert len(list(frames.glob("frame-*.png"))) == 5


def test_the_demo_plays_an_auction_and_two_permits() -> None:
    seen: list[str] = []
    with SimBoard(Config(), VirtualClock(), seed=5) as board:
        board.runtime.on_event(lambda e: seen.append(e.event))
        assert run_demo(Window(board), step_ms=250) == 0
    assert seen.count("auction.end") == 1 and seen.count("permit") == 2


def test_tones_start_and_stop_on_the_mixer() -> None:
    speaker = Speaker()
    assert speaker.channel is not None, "SDL's dummy audio driver is a sound device"
    speaker.on_event(Event(0, EventKind.TONE, {"hz": 2637}))
    assert speaker.channel.get_busy()
    speaker.on_event(Event(12, EventKind.TONE, {"hz": None}))
    assert not speaker.channel.get_busy()
    pygame.mixer.quit()


def test_docs_demo_gif_is_what_the_readmes_command_makes_now(tmp_path: Path) -> None:
    """The GIF at the top of the README had drifted from the window's drawing: made again
    by the README's own command, frame by frame, it must be the committed one."""
    import re
    import shlex
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    found = re.search(r"`python3 bootstrap\.py sim (--demo [^`]*--record docs/demo\.gif)`",
                      (root / "README.md").read_text())  # fmt: skip
    assert found, "README says how docs/demo.gif is made"
    args = shlex.split(found[1].replace("docs/demo.gif", str(tmp_path / "demo.gif")))
    environ = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    subprocess.run(
        [sys.executable, "-m", "cityunit", "sim", *args], env=environ | {"SDL_VIDEODRIVER": "dummy"},
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip

    def frames(path: Path) -> list[tuple[bytes, int]]:
        with Image.open(path) as gif:
            out = []
            for index in range(gif.n_frames):
                gif.seek(index)
                out.append((gif.convert("RGB").tobytes(), gif.info.get("duration", 0)))
            return out

    made, kept = frames(tmp_path / "demo.gif"), frames(root / "docs" / "demo.gif")
    same = made == kept  # (not in the assert: pytest would print every frame's bytes)
    assert same, (
        f"docs/demo.gif is out of date ({len(kept)} frames; the window makes {len(made)}):"
        f" python3 bootstrap.py sim {found[1]}"
    )


def test_the_window_draws_the_case_as_printed() -> None:
    """The window drew a cream lid with the switch on its face; the case a maker prints
    (hardware/enclosure/cityunit.scad) has a red lid and the switch in the side wall. The
    drawing's places and colours are the model's."""
    import ast
    import re

    from cityunit_sim import view

    scad = (Path(__file__).resolve().parents[2] / "hardware/enclosure/cityunit.scad").read_text()
    flat = re.sub(r"\s+", " ", scad)

    def value(name: str) -> object:
        found = re.search(rf"^{name}\s*=\s*([^;]+);", scad, re.M)
        assert found, name
        return ast.literal_eval(found[1].replace("[", "(").replace("]", ")"))

    def says(pattern: str) -> bool:
        return re.search(pattern.replace(" ", r"\s*"), flat) is not None

    assert value("diameter") == view.DIAMETER_MM
    assert value("buttons") == (view.BUTTONS_MM["auction"], view.BUTTONS_MM["build"])
    assert "AUCTION left, BUILD right" in scad
    assert says(r"module button\(b\) .* cylinder\(h = 3, d = 19\)") and view.BUTTON_CAP_MM == 19
    assert (value("led_at"), value("led_d")) == (view.LED_MM, view.LED_D_MM)
    assert value("buzzer_at") == view.BUZZER_MM
    assert says(r"rotate\(a\) translate\(\[3\.5, 0, 0\]\) cylinder\(h = lid_t \+ 2, d = 2\)")
    assert value("oled_y") + 1.5 == view.OLED_MM and says(r"1\.5, 1\.8\]")  # O[10]
    assert value("bosses") == view.SCREWS_DEG
    assert value("diameter") / 2 - value("wall") - 3.5 == view.SCREW_MM
    assert says(r"translate\(\[-r - 1, 0, switch_z\]\) rotate\(\[0, 90, 0\]\)"), "-x wall, y=0"
    assert says(r"cylinder\(h = 2, d = 11\)") and view.NUT_MM == (2, 11), "the toggle's nut"
    assert says(r'color\("firebrick"\) thing\("lid"\)') and view.LID == (178, 34, 34)
    assert says(r'color\("dimgray"\) toggle\(\)') and view.PART == (105, 105, 105)
    with Play() as p:
        p.wait(0)
        assert p.pixel(view.at((0, -15))) == view.LID, "the lid is red"
        assert math.dist(view.SWITCH.center, view.CENTER) > view.RADIUS, "out of the wall"
        assert p.pixel((view.WALL_X - 3, view.CENTER[1])) == view.PART, "its nut on the wall"
        assert p.window.view.hit((view.WALL_X + 2, view.CENTER[1])) is None, "not on the lid"
        led_bottom = view.at(view.LED_MM)[1] + round(view.LED_D_MM * view.MM / 2) + 1
        window = view.UnitView.oled_rect().inflate(2 * view.BEZEL, 2 * view.BEZEL)
        assert led_bottom < window.top, "the LED clear of the screen's window"
        assert view.CENTER[0] + view.RADIUS + view.GLOW <= view.SIZE[0], "the glow whole"
        p.click(view.SWITCH.center)
        assert p.board.runtime.snapshot.power, "and a click flips it"
