"""Screens to pixels: one 128x64 1-bit PIL image per screen, the only thing sent to a display.

Text uses DejaVu Sans Bold (a Latin-1 subset shipped with the package, so French
accents show on every machine) without anti-aliasing: a 1-bit OLED has no grey.
"""

from __future__ import annotations

from functools import cache, lru_cache, singledispatch
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from cityunit.core.permit import Permit
from cityunit.core.screens import (
    DOTS,
    AuctionScreen,
    Blank,
    HourEndScreen,
    HourScreen,
    MenuScreen,
    NotHaltedScreen,
    PermitScreen,
    RefusedScreen,
    Screen,
    ShutdownScreen,
    SoldScreen,
    StillOnScreen,
    SwitchOffScreen,
)

WIDTH, HEIGHT = 128, 64
SIZE = (WIDTH, HEIGHT)


FONTS = Path(__file__).parents[1] / "fonts"  # (package data, at the package's top)


@cache
def font(size: int, condensed: bool = False) -> ImageFont.FreeTypeFont:
    """Laid out by FreeType alone (BASIC): Pillow's other layout, RAQM, is used only where
    the system has libfribidi, which Pi OS Lite lacks, and spaces letters differently; so
    the same firmware would draw other pixels on another machine."""
    name = "DejaVuSansCondensed-Bold.ttf" if condensed else "DejaVuSans-Bold.ttf"
    return ImageFont.truetype(str(FONTS / name), size, layout_engine=ImageFont.Layout.BASIC)


def _canvas() -> tuple[Image.Image, ImageDraw.ImageDraw]:
    image = Image.new("1", SIZE, 0)
    draw = ImageDraw.Draw(image)
    draw.fontmode = "1"
    return image, draw


def _text(draw: ImageDraw.ImageDraw, y: int, text: str, size: int, fill: int = 1) -> None:
    """Centred text whose top sits at `y`; condensed, then smaller, until it fits."""
    glyphs, left, top = _lettered(text, size)
    if glyphs is not None:
        draw.bitmap((WIDTH // 2 + left, y + top), glyphs, fill=fill)


@lru_cache(maxsize=512)
def _lettered(text: str, size: int) -> tuple[Image.Image | None, int, int]:
    """`text` drawn once as a 1-bit mask, with its offset from the anchor (top centre).

    FreeType is the costliest step of a frame, and the same few words come back on
    every screen: each is drawn once, then stamped."""
    face = _fitted(text, size)
    core, (left, top) = face.getmask2(text, mode="1", anchor="mt")  # what draw.text uses
    if not core.size[0] or not core.size[1]:
        return None, 0, 0
    mask = Image.new("1", core.size, 0)
    draw = ImageDraw.Draw(mask)
    draw.fontmode = "1"
    draw.text((-left, -top), text, font=face, fill=1, anchor="mt")
    return mask, left, top


@lru_cache(maxsize=512)
def _fitted(text: str, size: int, width: int = WIDTH - 2) -> ImageFont.FreeTypeFont:
    """The largest face (regular, then condensed) at most `size` in which `text` fits."""
    while size > 8:
        for condensed in (False, True):
            face = font(size, condensed)
            if face.getlength(text) <= width:
                return face
        size -= 1
    return font(8, True)


def _title(draw: ImageDraw.ImageDraw, text: str) -> None:
    """A white bar with the screen's name in black: reads at a glance across a table."""
    draw.rectangle((0, 0, WIDTH - 1, 14), fill=1)
    _text(draw, 2, text, 12, fill=0)


def mini_station(draw: ImageDraw.ImageDraw, x: int, y: int) -> None:
    """The station permit in a 10x12 cell, for the history."""
    draw.rectangle((x, y + 4, x + 6, y + 9), fill=1)
    draw.rectangle((x + 5, y + 1, x + 9, y + 9), fill=1)
    draw.rectangle((x + 1, y + 1, x + 2, y + 4), fill=1)
    for wx in (x + 2, x + 7):
        draw.ellipse((wx - 2, y + 8, wx + 2, y + 12), fill=1, outline=0)


def station_icon(draw: ImageDraw.ImageDraw, cx: int, cy: int) -> None:
    """A small locomotive on rails, 44x30, centred on (cx, cy)."""
    x, y = cx - 22, cy - 15
    draw.rectangle((x + 4, y + 10, x + 30, y + 22), fill=1)  # boiler
    draw.rectangle((x + 28, y + 2, x + 40, y + 22), fill=1)  # cab
    draw.rectangle((x + 31, y + 5, x + 37, y + 10), fill=0)  # cab window
    draw.rectangle((x + 8, y + 3, x + 13, y + 10), fill=1)  # chimney
    draw.polygon([(x + 4, y + 22), (x, y + 26), (x + 4, y + 26)], fill=1)  # cow-catcher
    for wx in (x + 10, x + 21, x + 34):
        draw.ellipse((wx - 4, y + 21, wx + 4, y + 29), fill=1, outline=0)
    draw.line((x - 2, y + 29, x + 46, y + 29), fill=1)  # rail


def render(screen: Screen, lang: str) -> Image.Image:
    """The image a display is sent for `screen`, its words in `lang`."""
    image, canvas = _canvas()
    paint(screen, canvas, screen.lines(lang))
    return image


# ----- one painting per screen: a new screen registers its own ------------------------------

Canvas = ImageDraw.ImageDraw


@singledispatch
def paint(screen: Screen, canvas: Canvas, lines: list[str]) -> None:
    """`screen` drawn on a blank canvas from its own `lines`, by the painting its type
    registered (`@paint.register`); a TypeError for a type with none."""
    raise TypeError(f"no painting for {type(screen).__name__}")


@paint.register
def _blank(screen: Blank, canvas: Canvas, lines: list[str]) -> None:
    pass


@paint.register
def _hour(screen: HourScreen, canvas: Canvas, lines: list[str]) -> None:
    _text(canvas, 4, lines[0], 24)
    if screen.paused or screen.resumed:
        canvas.rectangle((14, 31, WIDTH - 15, 47), fill=1)
        _text(canvas, 33, lines[1], 13, fill=0)
    if screen.clock is not None:
        _text(canvas, 52, screen.clock, 11)


@paint.register
def _auction(screen: AuctionScreen, canvas: Canvas, lines: list[str]) -> None:
    _title(canvas, lines[0])
    y = 30 if screen.countdown_s is None else 24
    for i in range(DOTS):
        x = 22 + i * 28
        lit = i == screen.frame % DOTS
        canvas.ellipse((x - 6, y - 6, x + 6, y + 6), fill=1 if lit else 0, outline=1)
    if screen.countdown_s is not None:
        _text(canvas, 36, lines[2], 26)


@paint.register
def _sold(screen: SoldScreen, canvas: Canvas, lines: list[str]) -> None:
    canvas.rectangle((0, 0, WIDTH - 1, HEIGHT - 1), fill=1)
    _text(canvas, 18, lines[0], 28, fill=0)


@paint.register
def _permit(screen: PermitScreen, canvas: Canvas, lines: list[str]) -> None:
    _title(canvas, lines[0])
    if screen.drawing:
        canvas.rectangle((40, 17, 87, 52), outline=1)
    if screen.visible or screen.drawing:
        if screen.value is Permit.STATION:
            station_icon(canvas, WIDTH // 2, 35)
        else:
            _text(canvas, 17, str(screen.value.buildings), 38)
    if not screen.drawing:
        _text(canvas, 53, lines[2], 10)


@paint.register
def _hour_end(screen: HourEndScreen, canvas: Canvas, lines: list[str]) -> None:
    _title(canvas, lines[0])
    _text(canvas, 18, lines[1], 12)
    _text(canvas, 33, lines[2], 12)
    _text(canvas, 50, lines[3], 11)


@paint.register
def _menu(screen: MenuScreen, canvas: Canvas, lines: list[str]) -> None:
    if screen.item == "page":
        _page(screen, canvas, lines)
        return
    _title(canvas, lines[0])
    if screen.item == "history":
        _text(canvas, 18, lines[1], 12)
        if not screen.permits:
            _text(canvas, 38, lines[2], 12)
        _history(canvas, screen.permits)
    elif screen.item == "new_game":
        _text(canvas, 20, lines[1], 16)
        _text(canvas, 44, lines[2], 11)
    else:
        _text(canvas, 17, lines[1], 12)
        _text(canvas, 32, lines[2], 17)
        _text(canvas, 54, lines[3], 9)


def _page(screen: MenuScreen, canvas: Canvas, lines: list[str]) -> None:
    """The players' page: its QR code on the left, full height (a phone's camera reads it
    across the table), its address in words on the right."""
    import segno  # only where the page is served, and only on this screen

    assert screen.page is not None
    code = segno.make(screen.page.link, error="l", micro=False)
    size = int(code.symbol_size(border=0)[0])
    scale = 2 if size * 2 + 4 <= HEIGHT else 1
    border = max(1, (HEIGHT - size * scale) // (2 * scale))  # the quiet zone, lit
    side = (size + 2 * border) * scale
    top = (HEIGHT - side) // 2
    canvas.rectangle((0, top, side - 1, top + side - 1), fill=1)
    for y, row in enumerate(code.matrix):
        for x, dark in enumerate(row):
            if dark:
                left, up = (x + border) * scale, top + (y + border) * scale
                canvas.rectangle((left, up, left + scale - 1, up + scale - 1), fill=0)
    host, _, port = screen.page.address.split("//", 1)[-1].rstrip("/").rpartition(":")
    right, width = side + (WIDTH - side) // 2, WIDTH - side - 2
    words = [lines[1]]
    if font(10, True).getlength(host) > width:  # 192.168. / 100.200
        cut = host.find(".", host.find(".") + 1) + 1
        words += [host[:cut], host[cut:]]
    else:
        words.append(host)
    words.append(f":{port}")
    for y, word in zip((4, 22, 35, 48) if len(words) == 4 else (6, 28, 44), words, strict=True):
        _text_at(canvas, right, y, word, 10, width)


def _text_at(canvas: Canvas, centre: int, y: int, text: str, size: int, width: int) -> None:
    """Text centred on `centre`, at most `width` wide (condensed, then smaller)."""
    face = _fitted(text, size, width)
    canvas.text((centre, y), text, font=face, fill=1, anchor="mt")


def _history(canvas: Canvas, permits: tuple[Permit, ...]) -> None:
    """The last permits in a row, newest first: digits, and a small station."""
    x = max(2, (WIDTH - 12 * len(permits)) // 2)
    for permit in permits:
        if permit is Permit.STATION:
            mini_station(canvas, x + 1, 38)
        else:
            canvas.text((x + 5, 37), str(permit.value), font=font(13), fill=1, anchor="mt")
        x += 12


@paint.register
def _title_and_three(
    screen: StillOnScreen | RefusedScreen | NotHaltedScreen, canvas: Canvas, lines: list[str]
) -> None:
    _title(canvas, lines[0])
    for y, line in zip((20, 34, 48), lines[1:], strict=True):
        _text(canvas, y, line, 12)


@paint.register
def _switch_off(screen: SwitchOffScreen, canvas: Canvas, lines: list[str]) -> None:
    _title(canvas, lines[0])
    _text(canvas, 26, lines[1], 13)
    _text(canvas, 44, lines[2], 13)


@paint.register
def _shutdown(screen: ShutdownScreen, canvas: Canvas, lines: list[str]) -> None:
    _text(canvas, 26, lines[0], 13)
