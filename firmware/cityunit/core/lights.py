"""What the unit shows on its red LED, beside each sound (`sounds.py`): readable without
the OLED, and on a plain on/off LED too."""

from __future__ import annotations

from cityunit.core.patterns import Pattern, steady
from cityunit.core.permit import Permit

Light = Pattern[float]

# The LED blip of a press: inverted against the light's current level so it always shows.
BLIP_MS = 60

DARK: Light = steady(0.0)
LIT: Light = steady(1.0)
AUCTION_FLASH: Light = Pattern(((1.0, 500), (0.0, 500)), repeat=True)
# At least twice as fast as the steady flash: here four times, unmistakable.
AUCTION_FINAL_FLASH: Light = Pattern(((1.0, 125), (0.0, 125)), repeat=True)
# Paused: a short heartbeat every two seconds (works on a plain on/off LED too).
PAUSED: Light = Pattern(((0.3, 150), (0.0, 1850)), repeat=True)
SHUTDOWN: Light = Pattern(((1.0, 100), (0.0, 100)), repeat=True)


def permit_light(permit: Permit) -> Light:
    """As many blinks as buildings (readable without the OLED); the station flashes."""
    if permit is Permit.STATION:
        return Pattern(((1.0, 200), (0.0, 200)), repeat=True)
    return Pattern(((1.0, 110), (0.0, 110)) * permit.buildings + ((0.0, 1000),), repeat=True)
