"""The simulator: the real firmware on gpiozero's MockFactory pins, with no hardware."""

import os

# pygame greets on stdout at import; stdout may be the console protocol.
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")


def has_display() -> bool:
    """A screen to open a window on: an X or Wayland display, or a desktop OS.

    (Here, not in the window module, so that asking costs no pygame import.)
    """
    import sys

    if os.environ.get("SDL_VIDEODRIVER") in ("dummy", "offscreen"):
        return True
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
