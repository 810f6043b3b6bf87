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
    """Lines from stdin to the unit, what it sends to stdout. At a terminal: a prompt, with
    events printed above it. Piped (or `--json`): plain lines, no escape codes, and every
    line sent is answered before it exits."""
    import serial

    try:
        link = serial.serial_for_url(port, baudrate=baudrate, timeout=None)
    except (serial.SerialException, ValueError) as e:
        from cityunit.console.links import said_once

        print(f"cityunit console: cannot open {port}: {said_once(e)}", file=sys.stderr)
        return 2
    prompt = not raw and sys.stdin.isatty() and sys.stdout.isatty()
    replies = threading.Semaphore(0)  # one release per reply line received
    done = threading.Event()

    def show() -> None:
        buffer = b""
        try:
            while not done.is_set():
                buffer += link.read(max(1, link.in_waiting))
                *lines, buffer = buffer.split(b"\n")
                for data in lines:
                    text = data.decode("utf-8", "replace").rstrip("\r")
                    if prompt:
                        _above_prompt(describe(text))
                    else:
                        print(text if raw else describe(text), flush=True)
                    if not text.startswith("EVT "):
                        replies.release()
        except (serial.SerialException, OSError, TypeError):
            if not done.is_set():
                print("cityunit console: the port closed", file=sys.stderr)
        done.set()
        replies.release()  # nothing more will come: let a waiting exit go

    threading.Thread(target=show, daemon=True).start()
    try:
        if prompt:
            _prompt(link, done)
        else:
            sent = 0
            for line in sys.stdin:
                if line.strip(" \t\r\n"):  # blank lines get no reply
                    link.write(line.rstrip("\r\n").encode() + b"\n")
                    sent += 1
            for _ in range(sent):  # every line answered before leaving
                replies.acquire()
                if done.is_set():
                    break
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
