"""The players' page in a real browser: Debian's Chromium, headless, at a phone's size,
driven by Selenium through Debian's chromedriver (both installed by bootstrap.py where it
can, as QEMU and KiCad are). The unit runs on the virtual clock; the browser's waits are
for its own rendering, bounded."""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageChops
from web import Served, served

from cityunit.config import Config
from cityunit.core.rules import Rules

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="no Debian chromium and chromium-driver (bootstrap.py installs them as root)",
)
WIDTH, HEIGHT = 360, 740  # a small phone, held upright
GOLDEN = Path(__file__).parents[1] / "golden" / "page" / "page-360x740.png"  # not an OLED screen
SHOWN_S = 15.0  # the browser's own time to show what it was sent: a bound, not a pace


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
                     f"--window-size={WIDTH},{HEIGHT}", f"--user-data-dir={tmp_path / 'profile'}",
                     "--force-device-scale-factor=1", "--lang=en-GB"):  # fmt: skip
        options.add_argument(argument)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # Chromium refuses root with its sandbox on
    driver = webdriver.Chrome(options=options, service=Service(str(DRIVER)))
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": True},
    )
    try:
        yield driver
    finally:
        driver.quit()


def shown(driver: Any, test: Callable[[Any], Any], why: str) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, SHOWN_S, poll_frequency=0.05).until(test, why)


def text(driver: Any, element: str) -> str:
    found: str = driver.find_element("id", element).text
    return found


def visible(driver: Any, element: str) -> bool:
    found: bool = driver.find_element("id", element).is_displayed()
    return found


def switch_on(unit: Served) -> None:
    unit.on_loop(lambda: unit.board.unit.switch(True, unit.clock.now_ms()))
    unit.advance(0)


def test_the_page_follows_an_auction_to_sold_and_a_permit_live(browser: Any) -> None:
    with served() as unit:
        browser.get(f"http://127.0.0.1:{unit.port}/")
        shown(browser, lambda d: text(d, "link") == "live", "the page connects")
        assert not visible(browser, "controls"), "no token: the page only watches"
        switch_on(unit)
        shown(browser, lambda d: text(d, "hour") == "Hour 1", "the hour shows")
        unit.press("auction")
        shown(browser, lambda d: text(d, "auction-phase") == "Auction running", "the auction")
        while unit.state()["sold"] is None:  # its secret length: a second at a time
            unit.advance(1_000)
        shown(browser, lambda d: text(d, "sold-text") == "SOLD!", "SOLD")
        unit.advance(5_000)
        unit.press("build")
        unit.advance(10_000)
        value = unit.state()["permits"][0]
        listed = "Station" if value == "station" else str(value)
        shown(browser, lambda d: text(d, "permits") == listed, "the last permits")
        words = "Station" if value == "station" else f"{value} building" + "s" * (value > 1)
        assert text(browser, "permit-value") == words


def test_a_press_needs_the_token_from_the_units_screen(browser: Any) -> None:
    with served() as unit:
        switch_on(unit)
        browser.get(unit.page.link.link)  # as a phone's camera opens the QR code
        shown(browser, lambda d: visible(d, "controls"), "the buttons, with the token")
        assert "/K/" not in browser.current_url.upper(), "the token left the address bar"
        browser.find_element("id", "auction-button").click()
        shown(browser, lambda d: unit.state()["mode"] == "auction", "a press from the phone")
        browser.find_element("id", "auction-button").click()  # STOPPED
        shown(browser, lambda d: unit.state()["sold"] == "stopped", "stopped from the phone")
        unit.advance(5_000)
        unit.press("build", hold_ms=2_000)  # the menu, from the table: a new game
        while unit.on_loop(lambda: unit.board.unit.mode.screen(0)).item != "new_game":
            unit.press("build")
        unit.press("auction")
        browser.find_element("id", "auction-button").click()
        shown(browser, lambda d: visible(d, "refused"), "the old token refused, and said")
        assert "scan the code" in text(browser, "refused")
        assert unit.state()["mode"] != "auction"


def test_it_reconnects_by_itself_after_the_unit_restarts(browser: Any) -> None:
    with served() as unit:
        port = unit.port
        browser.get(f"http://127.0.0.1:{port}/")
        shown(browser, lambda d: text(d, "link") == "live", "the page connects")
    shown(browser, lambda d: text(d, "link") == "reconnecting…", "the unit gone, and said")
    with served(port=port) as again:
        switch_on(again)
        shown(browser, lambda d: text(d, "link") == "live", "back by itself")
        shown(browser, lambda d: text(d, "hour") == "Hour 1", "the restarted unit's state")


def test_the_page_at_a_phones_size_matches_its_golden(
    browser: Any, request: pytest.FixtureRequest
) -> None:
    """The game over, with permits drawn: nothing on it moves, so each pixel is the
    page's layout (Debian's Chromium and fonts: the golden is this machine's)."""
    with served(config=Config(rules=Rules(length_hours=1))) as unit:
        switch_on(unit)
        for _ in range(4):
            unit.press("build")
            unit.advance(10_000)
        unit.advance(3_600_000)
        browser.get(f"http://127.0.0.1:{unit.port}/")
        shown(browser, lambda d: visible(d, "over") and text(d, "link") == "live", "GAME OVER")
        browser.execute_script("document.activeElement.blur()")
        image = Image.open(io.BytesIO(browser.get_screenshot_as_png())).convert("RGB")
    assert image.size == (WIDTH, HEIGHT)
    if request.config.getoption("--update-goldens"):
        image.save(GOLDEN)
    golden = Image.open(GOLDEN).convert("RGB")
    difference = ImageChops.difference(image, golden).convert("L").point(lambda v: 255 * (v > 48))
    changed = sum(difference.histogram()[255:])
    assert changed <= WIDTH * HEIGHT // 200, f"{changed} pixels differ from {GOLDEN.name}"


def test_a_phone_is_the_simulators_unit(browser: Any) -> None:
    with served(sim=True) as unit:
        browser.get(unit.page.link.link)
        shown(browser, lambda d: visible(d, "switch-button"), "the switch on the page")
        browser.find_element("id", "switch-button").click()
        power = unit.board.pin("power")  # type: ignore[attr-defined]
        shown(browser, lambda d: power.state == 0, "the phone's switch moved the pin")
        unit.advance(100)  # then its debounce, on the virtual clock
        shown(browser, lambda d: text(d, "switch-button") == "SWITCH: ON", "switched ON")
        source = shown(
            browser, lambda d: d.find_element("id", "oled").get_attribute("src"), "a frame"
        )
        assert source.startswith("data:image/png;base64,")
        assert visible(browser, "sound-button") and visible(browser, "led")
