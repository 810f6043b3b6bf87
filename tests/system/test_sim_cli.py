"""`cityunit sim` refuses what cannot work or would be ignored: exit 2 and one line why."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

NO_SCREEN = ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER")


def sim(*args: str, env: dict[str, str] | None = None, code: str = "") -> tuple[int, str]:
    """`python -m cityunit sim ARGS` with no display (unless `env` gives one) and no input;
    `code`: run first, in the same interpreter."""
    environ = {k: v for k, v in os.environ.items() if k not in NO_SCREEN} | (env or {})
    main = "import runpy; runpy.run_module('cityunit', run_name='__main__')"
    command = ["-c", f"{code}; {main}", "sim"] if code else ["-m", "cityunit", "sim"]
    done = subprocess.run(
        [sys.executable, *command, *args],
        env=environ, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


REFUSED = [
    (["--window"], "no display: use --terminal (or --headless)"),
    (["--record", "x.gif"], "no display: `--demo --record FILE` records the demo without one"),
    (["--terminal"], "--terminal needs a terminal to draw in; piped, --headless speaks"),
    (["--speed", "60", "--clock", "virtual"], "--speed runs the real clock faster"),
    (["--speed", "60", "--demo"], "--speed runs the real clock faster"),
    (["--clock", "virtual", "--terminal"], "--clock virtual needs --headless"),
    (
        ["--record", "x.gif", "--headless"],
        "--record saves the window (--window or --demo), not the headless simulator",
    ),
    (
        ["--record", "x.gif", "--terminal"],
        "--record saves the window (--window or --demo), not the terminal",
    ),
    (
        ["--demo", "--record", "/nonexistent/dir/x.gif"],
        "--record: cannot write in /nonexistent/dir",
    ),
    (
        ["--console", "stdio", "--terminal"],
        "--console stdio is the headless simulator's; beside the terminal, --console pty",
    ),
    (
        ["--console", "stdio", "--demo"],
        "--console stdio is the headless simulator's; beside the window, --console pty",
    ),
]


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["sim", "--speed", "0"], "argument --speed: 0 is not between 0.01 and 1000"),
        (["sim", "--speed", "nan"], "argument --speed: nan is not between 0.01 and 1000"),
        # issue 38: 1e12 spun deaf to SIGTERM, 1e308 ended in an OverflowError
        (["sim", "--headless", "--speed", "1e12"], "argument --speed: 1e12 is not between"),
        (["sim", "--headless", "--speed", "1e308"], "argument --speed: 1e308 is not between"),
        (["sim", "--seed", "-1"], "argument --seed: -1 is not between 0 and 1.84467e+19"),
        (["console", "x", "--baudrate", "0"], "argument --baudrate: 0 is not between 50 and 4e+06"),
        (["bench", "--slow", "0.5"], "argument --slow: 0.5 is not between 1 and 1000"),
        (["sim", "--speed", "fast"], "argument --speed: 'fast' is not a number"),
    ],
)
def test_a_number_out_of_its_range_is_refused_by_the_command_line(
    args: list[str], why: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cityunit", *args],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and why in done.stderr and "Traceback" not in done.stderr, done


def test_an_unknown_option_is_said_with_its_commands_usage() -> None:
    """Issue 38: `cityunit sim --bogus` printed the top-level usage."""
    done = subprocess.run(
        [sys.executable, "-m", "cityunit", "sim", "--bogus"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.startswith("usage: cityunit sim "), done.stderr
    assert "cityunit sim: error: unrecognized arguments: --bogus" in done.stderr


def test_every_number_the_command_line_takes_has_a_range() -> None:
    """The mechanism behind --speed 1e12 and --baudrate 0: a bare int or float type."""
    import argparse

    from cityunit.cli import parser

    commands = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    bare = [
        f"{name} {'/'.join(action.option_strings)}"
        for name, command in commands.choices.items()
        for action in command._actions
        if action.type in (int, float) and action.choices is None
    ]
    assert not bare, f"numbers taken without a range: {bare}"


@pytest.mark.parametrize(("args", "why"), REFUSED)
def test_what_cannot_apply_is_refused_with_its_reason(args: list[str], why: str) -> None:
    code, out = sim(*args)
    assert code == 2 and out.startswith(f"cityunit sim: {why}") and out.count("\n") == 1, out


@pytest.mark.parametrize("mode", ["--window", "--demo"])
def test_without_pygame_the_window_names_the_extra_to_install(mode: str) -> None:
    code, out = sim(
        mode, env={"SDL_VIDEODRIVER": "dummy"}, code="import sys; sys.modules['pygame'] = None"
    )
    hint = "pip install -e '.[sim]' in the checkout (python3 bootstrap.py sim does it)"
    assert (code, out) == (2, f"cityunit sim: the window needs pygame: {hint}\n")


def test_without_pygame_at_a_terminal_the_simulator_runs_in_it() -> None:
    """The window was chosen because there is a display, not asked for: without the sim
    extra, the terminal is the next best (it used to refuse and stop)."""
    import pty
    import signal

    main, terminal = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k not in NO_SCREEN} | {"DISPLAY": ":99"}
    code = "import sys; sys.modules['pygame'] = None; import runpy; "
    code += "runpy.run_module('cityunit', run_name='__main__')"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "sim"], env=environ, stdin=terminal, stdout=terminal,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    os.close(terminal)
    try:
        assert proc.stderr is not None
        said = proc.stderr.readline()
        assert said.startswith("cityunit sim: no window without pygame (pip install -e"), said
        assert said.rstrip().endswith("): in the terminal")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        os.close(main)


def test_a_video_driver_set_on_purpose_is_tried_and_its_failure_told() -> None:
    code, out = sim("--window", env={"SDL_VIDEODRIVER": "x11"})
    assert code == 2 and "cityunit sim: no window (" in out and "Traceback" not in out, out


def test_the_demo_records_without_a_display(tmp_path: Path) -> None:
    code, out = sim("--demo", "--seed", "1", "--record", str(tmp_path / "frames"))
    assert code == 0, out
    assert len(list((tmp_path / "frames").glob("frame-*.png"))) > 100


def test_a_console_option_alone_asks_for_the_headless_protocol() -> None:
    """Even where a window could open: --console means the protocol."""
    environ = {k: v for k, v in os.environ.items() if k not in NO_SCREEN}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cityunit", "sim", "--console", "pty", "--seed", "1"],
        env=environ | {"SDL_VIDEODRIVER": "dummy"}, stdout=subprocess.PIPE, text=True,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("/dev/pts/")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_verbose_goes_before_or_after_the_command() -> None:
    for args in (["-v", "sim"], ["sim", "-v"]):
        done = subprocess.run(
            [sys.executable, "-m", "cityunit", *args, "--headless", "--clock", "virtual"],
            input="SWITCH ON\n", capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0 and "DEBUG cityunit.loop.runtime: tone" in done.stderr, args


def test_the_simulator_keeps_the_game_in_state_dir_and_resumes_it(tmp_path: Path) -> None:
    """As a Pi that lost power with its switch ON: the same hour goes on."""
    config = tmp_path / "config.toml"
    config.write_text(f'[state]\ndir = "{tmp_path / "state"}"\n')
    run = [sys.executable, "-m", "cityunit", "sim", "--headless", "--clock", "virtual",
           "--config", str(config)]  # fmt: skip
    first = subprocess.run(run, input="SWITCH ON\nADVANCE 600000\n", capture_output=True,
                           text=True, timeout=60)  # fmt: skip
    assert first.returncode == 0
    again = subprocess.run(run, input="STATE\n", capture_output=True, text=True, timeout=60)
    state = again.stdout.splitlines()[-1]
    assert '"power":"on"' in state and '"hour":1,"hour_elapsed_ms":600000' in state
    assert "RESUMED" in state


@pytest.mark.skipif(Path("/proc/device-tree/model").exists(), reason="this is a Pi")
@pytest.mark.parametrize("off", [[], ["--off"]], ids=["run", "run-off"])
def test_run_off_a_pi_says_to_use_the_simulator(off: list[str], tmp_path: Path) -> None:
    """`run --off` (the service's ExecStopPost) ended in a BadPinFactory traceback."""
    (tmp_path / "config.toml").write_text("")
    environ = {k: v for k, v in os.environ.items() if k != "GPIOZERO_PIN_FACTORY"}
    done = subprocess.run(
        [sys.executable, "-m", "cityunit", "run", *off, "--config", str(tmp_path / "config.toml")],
        env=environ, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    said = f"cityunit run{' --off' if off else ''}: no GPIO here"
    assert said in done.stderr and "use `cityunit sim`" in done.stderr
    assert "warnings.warn" not in done.stderr


def test_the_window_and_the_console_together() -> None:
    """A person watches the window while a script drives it on a pty (issue 22: the window
    could not serve the console)."""
    import signal

    from cityunit.console.client import Client

    environ = {k: v for k, v in os.environ.items() if k not in NO_SCREEN}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cityunit", "sim", "--window", "--console", "pty", "--seed", "1"],
        env=environ | {"SDL_VIDEODRIVER": "dummy"}, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        path = proc.stdout.readline().strip()
        assert path.startswith("/dev/pts/"), path
        with Client.port(path) as unit:
            assert not unit.virtual, "the window's hands keep real time"
            unit.switch(True)
            unit.press("build")
            assert unit.state()["mode"] == "permit"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
