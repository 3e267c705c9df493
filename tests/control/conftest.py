"""The control store's ``url`` fixture for these tests (tests/control_store.py)."""

from tests.control_store import url  # noqa: F401  (a fixture)
