"""The code stays clean: ruff (lint and format), mypy --strict, and the size of its parts."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [p for folder in ("firmware", "sim") for p in sorted((ROOT / folder).rglob("*.py"))]
MAX_FUNCTION_LINES, MAX_CLASS_LINES = 60, 300  # complexity: ruff's C901, at most 20


@pytest.mark.parametrize("args", [["check"], ["format", "--check"]])
def test_ruff(args: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *args, "."], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict() -> None:
    """`mypy` reads its settings (strict, firmware/ and sim/) from pyproject.toml."""
    result = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_function_or_class_is_too_long() -> None:
    too_long = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                limit = MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    too_long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {lines}")
    assert too_long == []
