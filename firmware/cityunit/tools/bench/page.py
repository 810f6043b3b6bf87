"""What the players' page costs the unit: the loop's answer time with 30 phones watching
and one that stops reading, against none; the memory they take; the page's thread at
rest (it must not wake); and how soon a cold phone-sized browser paints the page, where
Debian's Chromium is installed."""

from __future__ import annotations

import resource
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cityunit.config import Config
from cityunit.core.rules import Rules
from cityunit.tools.bench.rig import Rig, pct
from cityunit.web.http import listening

PHONES = 30


def page(seconds: float) -> dict[str, float]:
    """The figures, each over `seconds` of an auction after another on the real clock."""
    rules = Rules(auction_mode="fixed", auction_fixed_s=2, auction_final_s=1)
    with Rig(Config(rules=rules)) as rig:
        sock = listening(0, "127.0.0.1")
        port = sock.getsockname()[1]
        served = rig.board.serve_page(sock, f"http://127.0.0.1:{port}/")
        rig.pin("power").drive_low()
        time.sleep(0.5)
        web = _thread("web")
        at_rest = _switches(web)
        time.sleep(min(seconds, 5.0))
        wakeups = _switches(web) - at_rest
        alone = _loop_calls(rig, seconds)
        rss_before = _rss_kb()
        with _phones(port, PHONES) as readers, _frozen(port):
            time.sleep(0.5)
            watched = _loop_calls(rig, seconds)
            sent = sum(reader.received for reader in readers)
        rss_after = _rss_kb()
        refused = served.refused
    figures = {
        "page_idle_wakeups": float(wakeups),
        "loop_call_ms_p99_alone": pct(alone, 99),
        "loop_call_ms_p99_30_phones": pct(watched, 99),
        "page_rss_growth_kb": float(max(0, rss_after - rss_before)),
        "page_bytes_per_phone_s": sent / PHONES / seconds,
        "page_refused": float(refused),
    }
    figures.update(first_paint())
    return figures


def _loop_calls(rig: Rig, seconds: float) -> list[float]:
    """The loop's answer time (a call's wait in the inbox: the path of every console
    line and press), sampled every 20 ms while auctions run one after another."""
    samples: list[float] = []
    done = threading.Event()
    end = time.monotonic() + seconds
    button, next_press = rig.pin("auction"), 0.0
    while time.monotonic() < end:
        if time.monotonic() >= next_press:  # a new auction every 2.5 s: events and frames
            button.drive_low()
            time.sleep(0.03)
            button.drive_high()
            next_press = time.monotonic() + 2.5
        t0 = time.perf_counter_ns()
        done.clear()
        rig.runtime.call(done.set)
        done.wait(2)
        samples.append((time.perf_counter_ns() - t0) / 1e6)
        time.sleep(0.02)
    return samples


class _Phone(threading.Thread):
    """A phone that reads its stream as fast as it comes."""

    def __init__(self, port: int, number: int) -> None:
        super().__init__(daemon=True)
        # each from an address of its own, as phones are (the page takes 8 an address)
        self.sock = socket.create_connection(
            ("127.0.0.1", port), source_address=(f"127.0.1.{number}", 0)
        )
        self.sock.sendall(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        self.received = 0

    def run(self) -> None:
        try:
            while data := self.sock.recv(65536):
                self.received += len(data)
        except OSError:
            pass


@contextmanager
def _phones(port: int, count: int) -> Iterator[list[_Phone]]:
    phones = [_Phone(port, number) for number in range(1, count + 1)]
    for phone in phones:
        phone.start()
    try:
        yield phones
    finally:
        for phone in phones:
            phone.sock.shutdown(socket.SHUT_RDWR)
            phone.sock.close()
            phone.join(2)


@contextmanager
def _frozen(port: int) -> Iterator[None]:
    """A phone that stops reading at once (its screen locked), with a small buffer."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    try:
        yield
    finally:
        sock.close()


def _thread(name: str) -> int:
    for thread in threading.enumerate():
        if thread.name == name and thread.native_id is not None:
            return thread.native_id
    raise RuntimeError(f"no thread {name!r}")


def _switches(tid: int) -> int:
    """A thread's context switches so far: each wake-up is one."""
    status = Path(f"/proc/self/task/{tid}/status").read_text()
    return sum(
        int(line.split()[1])
        for line in status.splitlines()
        if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"))
    )


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def first_paint() -> dict[str, float]:
    """A cold headless Chromium at 360x740 (a fresh profile) loading the page from a
    simulator: its first contentful paint, as the browser reports it (ms); none where
    Chromium, chromedriver or Selenium are missing."""
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.support.wait import WebDriverWait
    except ImportError:
        return {}
    if chromium is None or driver_path is None:
        return {}
    import os
    import tempfile

    with Rig(Config()) as rig, tempfile.TemporaryDirectory() as profile:
        sock = listening(0, "127.0.0.1")
        port = sock.getsockname()[1]
        rig.board.serve_page(sock, f"http://127.0.0.1:{port}/")
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for argument in ("--headless=new", "--disable-gpu", "--window-size=360,740",
                         f"--user-data-dir={profile}"):  # fmt: skip
            options.add_argument(argument)
        if os.geteuid() == 0:
            options.add_argument("--no-sandbox")
        browser = webdriver.Chrome(options=options, service=Service(driver_path))
        try:
            browser.get(f"http://127.0.0.1:{port}/")  # (returns at the load event, which
            # a loaded machine's browser can reach before it has painted: asked until then)
            paint = WebDriverWait(browser, 30).until(lambda b: b.execute_script(
                "return performance.getEntriesByName('first-contentful-paint')[0]?.startTime"
            ))  # fmt: skip
        finally:
            browser.quit()
    return {"page_first_paint_ms": float(paint)}
