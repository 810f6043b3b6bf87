"""The simulator: the real firmware on gpiozero's MockFactory pins, with no hardware."""

import os

# pygame greets on stdout at import; stdout may be the console protocol.
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
