"""The SD-card image tier (a package: its conftest must not shadow tests/conftest.py)."""
