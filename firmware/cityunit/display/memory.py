"""A frame as an OLED controller's memory holds it, and what differs between two.

Frames are packed by Pillow, not pixel by pixel in Python as luma does: transposing
the image and reading it as LSB-first bytes gives display RAM directly (bit k of byte x
on page p is pixel (x, 8p + k)).
"""

from __future__ import annotations

import re

from PIL import Image

Pages = list[bytes]  # display RAM, top page first: one byte per column, LSB at the top
Run = tuple[int, int, int]  # (page, first column, last column) of a change
_CHANGED = re.compile(rb"[^\x00]+")


def pages(image: Image.Image) -> Pages:
    """The image as display-RAM pages, top first."""
    count = image.height // 8
    columns = image.convert("1").transpose(Image.Transpose.TRANSPOSE).tobytes("raw", "1;R")
    return [columns[page::count] for page in range(count)]


def spans(changed: bytes, overhead: int, height: int = 1) -> list[tuple[int, int]]:
    """The columns where `changed` is not zero, as (first, last) spans; two spans whose gap
    costs less to send (`height` bytes a column) than starting another span (`overhead`)
    are one. Each gap is decided alone, so the total is the least possible."""
    out: list[tuple[int, int]] = []
    for m in _CHANGED.finditer(changed):
        first, last = m.start(), m.end() - 1
        if out and (first - out[-1][1] - 1) * height < overhead:
            first = out.pop()[0]
        out.append((first, last))
    return out


def differences(new: Pages, old: Pages) -> list[int]:
    """Each page's changed bits, as one number (the first column the highest byte)."""
    return [int.from_bytes(a) ^ int.from_bytes(b) for a, b in zip(new, old, strict=True)]


def changed_bytes(new: Pages, old: Pages) -> int:
    """How many bytes differ: what any plan must send at least."""
    width = len(new[0])
    return sum(width - x.to_bytes(width).count(0) for x in differences(new, old))


def runs(new: Pages, old: Pages, overhead: int) -> list[Run]:
    """The columns that differ, page by page, in spans (see `spans`)."""
    width = len(new[0])
    return [
        (page, first, last)
        for page, changed in enumerate(differences(new, old))
        if changed
        for first, last in spans(changed.to_bytes(width), overhead)
    ]


def inverse(frame: Pages) -> Pages:
    """Every pixel flipped."""
    return [page.translate(_FLIP) for page in frame]


_FLIP = bytes(255 - b for b in range(256))
