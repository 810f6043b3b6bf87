"""What the unit plays on its buzzer, in one place so the sounds stay distinct.

Tones sit between about 1 kHz (the cancel's last note, 988 Hz) and 4 kHz, where a small
piezo is loudest: a table of six must hear them. Each signal that matters also has a
light pattern (`lights.py`), so a muted unit or one without its OLED still tells the
players what happened.
"""

from __future__ import annotations

from cityunit.core.patterns import Pattern, steady
from cityunit.core.permit import Permit

Tone = Pattern[int | None]

REST: None = None


def tune(*notes: tuple[int | None, int]) -> Tone:
    """Notes of (Hz, or REST, and ms), played once."""
    return Pattern(tuple(notes))


# Every press, the moment it goes down.
CLICK = tune((4000, 12))

POWER_ON = tune((2093, 70), (2637, 70), (3136, 140))
AUCTION_START = tune((2637, 60), (REST, 40), (3136, 140))
# The last seconds of an auction: a beep on every second flash cycle.
FINAL_BEEPS = Pattern(((3520, 90), (REST, 410)), repeat=True)
SOLD = tune((3136, 140), (REST, 60), (3136, 140), (REST, 60), (2093, 600))
STOPPED = tune((2637, 120), (REST, 40), (2093, 400))
CANCELLED = tune((1319, 150), (988, 350))

DRAW_MS = 800
DRAW_FRAME_MS = 100
DRAW = tune((2000, 12), (REST, DRAW_FRAME_MS - 12)) * (DRAW_MS // DRAW_FRAME_MS)

HOUR_WARNING = tune((2794, 120))
HOUR_SIGNAL = tune((2093, 180), (2637, 180), (3136, 400))
HOUR_END = tune(
    (3136, 200),
    (2637, 200),
    (2093, 200),
    (REST, 120),
    (3136, 200),
    (2637, 200),
    (2093, 200),
    (REST, 120),
    (1568, 900),
)
REMINDER = tune((2093, 150), (REST, 100), (2093, 150))
PAUSE = tune((2093, 100), (1568, 220))
RESUME = tune((1568, 100), (2093, 220))
SHUTDOWN = tune((2093, 200), (1568, 200), (1047, 600))
MENU_OPEN = tune((1568, 60), (2093, 60), (2637, 60))
MENU_CLOSE = tune((2637, 60), (2093, 60), (1568, 60))
MENU_CHANGE = tune((3136, 50))


def permit_tune(permit: Permit) -> Tone:
    """As many beeps as buildings; a two-tone whistle for the station."""
    if permit is Permit.STATION:
        return tune((1760, 220), (2217, 220), (1760, 220), (2217, 380))
    beep = tune((2637, 110), (REST, 110))
    return beep * permit.buildings


NO_BEEPS: Tone = steady(None)
