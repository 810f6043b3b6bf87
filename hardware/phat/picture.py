"""The pHAT drawn as it comes from the fab, seen from above: the board, its copper under
the mask, the pads, the silkscreen. Drawn from the board itself with Pillow (which
Debian's KiCad brings), so the picture in the guide is always this board's."""

from __future__ import annotations

import math
from pathlib import Path

import pcbnew
from PIL import Image, ImageDraw, ImageFont

PX = 20  # pixels a mm
BOARD, FRONT, BACK = (22, 92, 52), (52, 140, 80), (30, 110, 64)
GOLD, HOLE, SILK = (214, 172, 72), (24, 24, 24), (245, 245, 240)
FONT = (
    Path(__file__).resolve().parents[2] / "firmware" / "cityunit" / "fonts" / "DejaVuSans-Bold.ttf"
)


def mm(v: int) -> float:
    return pcbnew.ToMM(v) * PX


def xy(p: pcbnew.wxPoint, margin: int) -> tuple[float, float]:
    return mm(p.x) + margin, mm(p.y) + margin


def draw(pcb: pcbnew.BOARD, path: Path, width: float, height: float, corner: float) -> None:
    margin = PX * 2
    image = Image.new(
        "RGB", (round(width * PX) + 2 * margin, round(height * PX) + 2 * margin), "white"
    )
    d = ImageDraw.Draw(image)
    d.rounded_rectangle(
        (margin, margin, margin + width * PX, margin + height * PX), corner * PX, fill=BOARD
    )
    for layer, colour in ((pcbnew.B_Cu, BACK), (pcbnew.F_Cu, FRONT)):
        for t in pcb.GetTracks():
            if t.GetLayer() == layer and not isinstance(t, pcbnew.PCB_VIA):
                w = mm(t.GetWidth())
                a, b = xy(t.GetStart(), margin), xy(t.GetEnd(), margin)
                d.line((a, b), fill=colour, width=round(w))
                for end in (a, b):
                    d.ellipse(
                        (end[0] - w / 2, end[1] - w / 2, end[0] + w / 2, end[1] + w / 2),
                        fill=colour,
                    )
    for fp in pcb.GetFootprints():
        for g in fp.GraphicalItems():
            if g.GetLayer() == pcbnew.F_SilkS and isinstance(g, pcbnew.FP_SHAPE):
                _shape(d, g, margin)
        for pad in fp.Pads():
            _pad(d, pad, margin)
    for t in pcb.GetTracks():
        if isinstance(t, pcbnew.PCB_VIA):
            c, r = xy(t.GetPosition(), margin), mm(t.GetWidth()) / 2
            d.ellipse((c[0] - r, c[1] - r, c[0] + r, c[1] + r), fill=GOLD)
            r = mm(t.GetDrillValue()) / 2
            d.ellipse((c[0] - r, c[1] - r, c[0] + r, c[1] + r), fill=HOLE)
    texts = [
        fp.Reference()
        for fp in pcb.GetFootprints()
        if fp.Reference().IsVisible() and not fp.IsFlipped()
    ]
    texts += [
        t
        for t in pcb.GetDrawings()
        if isinstance(t, pcbnew.PCB_TEXT) and t.GetLayer() == pcbnew.F_SilkS
    ]
    for t in texts:  # each in the middle of the box KiCad gives it, turned as it is
        font = ImageFont.truetype(str(FONT), round(mm(t.GetTextHeight()) * 1.1))
        left, top, right, bottom = font.getbbox(t.GetText(), anchor="lt")
        word = Image.new("RGBA", (right - left + 2, bottom - top + 2))
        ImageDraw.Draw(word).text((1 - left, 1 - top), t.GetText(), SILK, font, anchor="lt")
        word = word.rotate(t.GetTextAngle() / 10, expand=True)
        cx, cy = xy(t.GetBoundingBox().Centre(), margin)
        image.paste(word, (round(cx - word.width / 2), round(cy - word.height / 2)), word)
    image.save(path, optimize=True)


def _pad(d: ImageDraw.ImageDraw, pad: pcbnew.PAD, margin: int) -> None:
    box = pad.GetBoundingBox()
    x0, y0 = xy(box.GetOrigin(), margin)
    x1, y1 = x0 + mm(box.GetWidth()), y0 + mm(box.GetHeight())
    if pad.GetAttribute() == pcbnew.PAD_ATTRIB_NPTH:
        d.ellipse((x0, y0, x1, y1), fill=(200, 200, 200))
        return
    if pad.GetShape() == pcbnew.PAD_SHAPE_RECT:
        d.rectangle((x0, y0, x1, y1), fill=GOLD)
    elif pad.GetShape() == pcbnew.PAD_SHAPE_ROUNDRECT:
        d.rounded_rectangle((x0, y0, x1, y1), min(x1 - x0, y1 - y0) / 4, fill=GOLD)
    else:
        d.rounded_rectangle((x0, y0, x1, y1), min(x1 - x0, y1 - y0) / 2, fill=GOLD)
    c, r = xy(pad.GetPosition(), margin), mm(pad.GetDrillSize().x) / 2
    d.ellipse((c[0] - r, c[1] - r, c[0] + r, c[1] + r), fill=HOLE)


def _shape(d: ImageDraw.ImageDraw, g: pcbnew.FP_SHAPE, margin: int) -> None:
    w = max(1, round(mm(g.GetWidth())))
    shape = g.GetShape()
    if shape == pcbnew.SHAPE_T_SEGMENT:
        d.line((xy(g.GetStart(), margin), xy(g.GetEnd(), margin)), fill=SILK, width=w)
    elif shape == pcbnew.SHAPE_T_RECT:
        (x0, y0), (x1, y1) = xy(g.GetStart(), margin), xy(g.GetEnd(), margin)
        d.rectangle((min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)), outline=SILK, width=w)
    elif shape in (pcbnew.SHAPE_T_CIRCLE, pcbnew.SHAPE_T_ARC):
        c, r = xy(g.GetCenter(), margin), mm(g.GetRadius())
        box = (c[0] - r, c[1] - r, c[0] + r, c[1] + r)
        if shape == pcbnew.SHAPE_T_CIRCLE:
            d.ellipse(box, outline=SILK, width=w)
        else:
            s, m, e = (xy(p, margin) for p in (g.GetStart(), g.GetArcMid(), g.GetEnd()))
            angles = [math.degrees(math.atan2(p[1] - c[1], p[0] - c[0])) for p in (s, m, e)]
            a0, am, a1 = (a % 360 for a in angles)
            clockwise_on_screen = (am - a0) % 360 <= (a1 - a0) % 360  # PIL draws clockwise
            start, end = (a0, a1) if clockwise_on_screen else (a1, a0)
            d.arc(box, start, end, fill=SILK, width=w)
