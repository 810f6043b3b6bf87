"""cityunit as a third party gets it: the built wheel and sdist, each installed into a
fresh venv outside this checkout, type-checked and tested from docs/testing.md alone.

Slow for a mock-tier test (about a minute each: the venv takes its dependencies from the
package index, or pip's cache), and the only test that sees what the package ships
rather than the checkout's files.
"""

from __future__ import annotations

import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the wheel and sdist built, each installed in a fresh venv

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "testing.md"
GOLDEN = ROOT / "tests" / "golden" / "switch-off.en.png"

TYPED = """
from cityunit.console.client import Client


def auction_length(seed: int) -> int:
    with Client.simulator(seed=seed) as unit:
        unit.switch(True)
        unit.press("auction")
        start: dict[str, object] = unit.wait_for("auction.start", within_ms=0)
        end = unit.wait_for("auction.end", within_ms=60_000)
        return int(end["t_ms"]) - int(str(start["t_ms"]))
"""

TESTER = """
from pathlib import Path


def test_the_screen_and_raw_edges(cityunit):
    cityunit.assert_screen(Path(__file__).with_name("off.png"))  # OFF, never yet ON: said
    cityunit.edge("power", "low")
    chatter = [("auction", "low"), ("auction", "high")] * 5
    for contact, level in chatter + [("auction", "low")]:
        cityunit.edge(contact, level)
        cityunit.advance(2)
    cityunit.advance(100)
    cityunit.edge("auction", "high")
    cityunit.advance(10)
    assert len(cityunit.named("auction.start")) == 1, "the chatter was one press"
    assert cityunit.screen().getbbox() is not None
    cityunit.fault("display", "gone")
    lost = cityunit.wait_for("fault", within_ms=2_000, part="display")
    assert lost["detail"].startswith("lost"), lost
    cityunit.fault("display", "back")
    assert cityunit.wait_for("fault", within_ms=5_000, detail="back")["part"] == "display"
"""


def run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`python -m build` of this checkout: the wheel and the sdist."""
    dist = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "build", "--outdir", dist, ROOT, cwd=dist)
    return {"wheel": next(dist.glob("*.whl")), "sdist": next(dist.glob("*.tar.gz"))}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_a_third_party_installs_it_type_checks_and_tests_with_it(
    built: dict[str, Path], kind: str, tmp_path: Path
) -> None:
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", built[kind], "pytest", "mypy", cwd=tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    (project / "lengths.py").write_text(TYPED)
    run(python, "-m", "mypy", "--strict", "lengths.py", cwd=project)
    complete = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)[0]
    (project / "test_auction.py").write_text(complete)
    (project / "test_tester.py").write_text(TESTER)
    (project / "off.png").write_bytes(GOLDEN.read_bytes())
    tested = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=project)
    assert "4 passed" in tested.stdout, tested.stdout
    where = run(python, "-c", "import cityunit; print(cityunit.__file__)", cwd=project)
    assert str(ROOT) not in where.stdout, "the installed package, not this checkout"
