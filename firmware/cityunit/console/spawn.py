"""A simulator of this installation as a child process, for `Client.simulator`: its stdin
and stdout are the console's line, and what it says on stderr (a config it refuses, a
traceback) is kept, so that an error the connection ends in can say it."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Callable
from functools import partial
from typing import IO

WAIT_S = 30.0  # for the simulator to exit once its input ends; then it is killed
STDERR_TAIL = 2_000  # characters of its own messages kept for an error


def simulator(
    command: list[str],
) -> tuple[Callable[[bytes], None], Callable[[], bytes], Callable[[], None], Callable[[], str]]:
    """`command` started: (write, read, close, said) for a Client."""
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
    assert stdin is not None and stdout is not None and stderr is not None
    said = _Tail(stderr)

    def write(data: bytes) -> None:
        try:
            stdin.write(data)
            stdin.flush()
        except OSError:  # it has exited: the wait for the reply says why
            pass

    def close() -> None:
        with contextlib.suppress(OSError):
            stdin.close()  # the simulator answers what it has, then exits
        try:
            process.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    return write, partial(os.read, stdout.fileno(), 65536), close, said.text


class _Tail:
    """The last STDERR_TAIL characters a pipe carries, read on a thread of its own (an
    unread pipe would fill and stop the simulator)."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self._text = ""
        self._lock = threading.Lock()
        self._ended = threading.Event()
        threading.Thread(target=self._read, args=(pipe,), daemon=True).start()

    def _read(self, pipe: IO[bytes]) -> None:
        try:
            for raw in iter(partial(pipe.read1, 4096), b""):  # type: ignore[attr-defined]
                with self._lock:
                    self._text = (self._text + raw.decode("utf-8", "replace"))[-STDERR_TAIL:]
        finally:
            self._ended.set()

    def text(self) -> str:
        """What it carried: all of it once the simulator has gone (its last words come a
        moment after its output ends), else what came so far."""
        self._ended.wait(2.0)
        with self._lock:
            return self._text
