"""`cityunit console PORT`: a person's (or a script's) end of the console protocol."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import serial

HISTORY = Path.home() / ".cityunit_history"


def describe(line: str) -> str:
    """An event line made readable: '  12.345 s  auction.end  stopped=true'."""
    if not line.startswith("EVT "):
        return line
    try:
        event = json.loads(line[4:])
        t, name = event.pop("t_ms") / 1000, event.pop("event")
    except (ValueError, KeyError, TypeError, AttributeError):
        return line
    extra = "  ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in event.items())
    return f"  {t:9.3f} s  {name}  {extra}".rstrip()


def interact(port: str, baudrate: int, raw: bool) -> int:
    import serial

    try:
        link = serial.serial_for_url(port, baudrate=baudrate, timeout=None)
    except (serial.SerialException, ValueError) as e:
        print(f"cityunit console: cannot open {port}: {e}", file=sys.stderr)
        return 2
    done = threading.Event()

    def show() -> None:
        buffer = b""
        try:
            while not done.is_set():
                buffer += link.read(max(1, link.in_waiting))
                *lines, buffer = buffer.split(b"\n")
                for data in lines:
                    text = data.decode("utf-8", "replace").rstrip("\r")
                    if raw:
                        print(text, flush=True)
                    else:
                        _above_prompt(describe(text))
        except (serial.SerialException, OSError):
            print("cityunit console: the port closed", file=sys.stderr)
        done.set()

    threading.Thread(target=show, daemon=True).start()
    try:
        if raw:
            for line in sys.stdin:
                link.write(line.encode())
        else:
            _prompt(link, done)
    except KeyboardInterrupt:
        pass
    finally:
        done.set()
        link.close()
    return 0


PROMPT = "unit> "


def _above_prompt(text: str) -> None:
    """Print a line above the prompt and redraw what the person was typing."""
    try:
        import readline

        typed = readline.get_line_buffer()
    except ImportError:
        typed = ""
    sys.stdout.write(f"\r\x1b[K{text}\n{PROMPT}{typed}")
    sys.stdout.flush()


def _prompt(link: serial.Serial, done: threading.Event) -> None:
    readline: ModuleType | None
    try:
        import readline
    except ImportError:  # not on every platform; the prompt works without history
        readline = None
    if readline is not None:
        with contextlib.suppress(OSError):
            readline.read_history_file(HISTORY)
    print("commands: HELP, STATE, EVENTS ON, PRESS AUCTION, ...; Ctrl-D quits", file=sys.stderr)
    try:
        while not done.is_set():
            try:
                line = input(PROMPT)
            except EOFError:
                break
            if line.strip():
                link.write((line.strip() + "\n").encode())
    finally:
        if readline is not None:
            with contextlib.suppress(OSError):
                readline.write_history_file(HISTORY)
