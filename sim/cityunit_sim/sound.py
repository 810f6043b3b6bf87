"""The buzzer through pygame's mixer: the tones the firmware plays, as long as it plays them.

Tone events are handled on the loop thread the moment the firmware changes the buzzer,
so a 12 ms click lasts 12 ms. Where there is no sound device the simulator stays silent
and says so once.
"""

from __future__ import annotations

import logging
import os
import sys
from array import array
from functools import cache

import pygame

from cityunit.core.events import Event, EventKind

log = logging.getLogger(__name__)
RATE = 44_100
AMPLITUDE = 5_000  # a square wave is loud; this keeps it pleasant


class Speaker:
    """The buzzer's tones as square waves on the desktop's speaker, or silence (said once)
    where there is no sound device."""

    def __init__(self) -> None:
        self.channel: pygame.mixer.Channel | None = None
        if not _sound_device():
            log.warning("no sound device: the simulator stays silent")
            return
        try:
            pygame.mixer.init(frequency=RATE, size=-16, channels=1, buffer=512)
            self.channel = pygame.mixer.Channel(0)
        except pygame.error as e:
            log.warning("no sound device (%s): the simulator stays silent", e)

    def on_event(self, event: Event) -> None:
        """A runtime listener, on the loop thread: a tone event starts or stops the wave
        at once, looping until the next; other events are not its business."""
        if self.channel is None or event.event is not EventKind.TONE:
            return
        hz = event.data["hz"]
        if hz is None:
            self.channel.stop()
        else:
            self.channel.play(_square(hz), loops=-1)


@cache
def _square(hz: int) -> pygame.mixer.Sound:
    """About 50 ms of a square wave at `hz`, a whole number of periods so it loops cleanly."""
    period = RATE / hz
    periods = max(1, round(0.05 * hz))
    n = round(period * periods)
    samples = array("h", (AMPLITUDE if (i % period) < period / 2 else -AMPLITUDE for i in range(n)))
    return pygame.mixer.Sound(buffer=samples.tobytes())


def _sound_device() -> bool:
    """Whether a sound server or card could be there (asking ALSA for none spews errors)."""
    if sys.platform != "linux" or os.environ.get("SDL_AUDIODRIVER"):
        return True
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    servers = [os.path.join(runtime, "pulse", "native"), os.path.join(runtime, "pipewire-0")]
    return (
        os.path.exists("/dev/snd")
        or bool(os.environ.get("PULSE_SERVER"))
        or any(os.path.exists(p) for p in servers)
    )
