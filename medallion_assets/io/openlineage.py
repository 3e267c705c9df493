"""Sending OpenLineage events with the openlineage-python client, configured OpenLineage's way.

Configuration is the client's own: ``OPENLINEAGE_URL`` (and ``OPENLINEAGE_API_KEY``,
``OPENLINEAGE_ENDPOINT``), ``OPENLINEAGE_CONFIG`` or an ``openlineage.yml`` in the working
directory or ``~/.openlineage``, or ``OPENLINEAGE__TRANSPORT__*`` variables (HTTP, file,
console, Kafka, ...). With none of them set, or ``OPENLINEAGE_DISABLED=true``, nothing is sent
(the client's own fallback, printing every event to the console, is not taken).

A step never fails because of lineage, and never waits on it for more than
``MEDALLION_OPENLINEAGE_TIMEOUT`` seconds (default 5) per event: the event is sent on a
daemon thread, and a send that fails or overruns is logged and given up.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from medallion_assets.settings import MedallionSettings

log = logging.getLogger(__name__)

TIMEOUT_VAR = "MEDALLION_OPENLINEAGE_TIMEOUT"
DEFAULT_NAMESPACE = "medallion"


def job_namespace(env: Mapping[str, str] | None = None) -> str:
    """The namespace of the project's OpenLineage jobs (the steps', Spark's, the export's):
    ``OPENLINEAGE_NAMESPACE``, else ``medallion``."""
    env = os.environ if env is None else env
    return env.get("OPENLINEAGE_NAMESPACE") or DEFAULT_NAMESPACE


def configured(env: Mapping[str, str] | None = None, cwd: Path | None = None) -> bool:
    """Whether OpenLineage is configured (and not disabled) in ``env``.

    >>> configured({})
    False
    >>> configured({"OPENLINEAGE_URL": "http://127.0.0.1:5000"})
    True
    >>> configured({"OPENLINEAGE_URL": "http://x", "OPENLINEAGE_DISABLED": "true"})
    False
    >>> configured({"OPENLINEAGE__TRANSPORT__TYPE": "console"})
    True
    """
    env = os.environ if env is None else env
    if env.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OPENLINEAGE_URL") or env.get("OPENLINEAGE_CONFIG"):
        return True
    if any(name.startswith("OPENLINEAGE__TRANSPORT") for name in env):
        return True
    files = [(cwd or Path.cwd()) / "openlineage.yml"]
    if env is os.environ:
        files.append(Path.home() / ".openlineage" / "openlineage.yml")
    return any(path.is_file() for path in files)


def timeout_s(env: Mapping[str, str] | None = None) -> float:
    """``MEDALLION_OPENLINEAGE_TIMEOUT`` (``settings.py``; a bad value is an error naming it)."""

    return MedallionSettings.from_env(
        os.environ if env is None else env
    ).openlineage_timeout_seconds


class LineageEmitter:
    """Sends events through an ``OpenLineageClient`` built from the environment on first use;
    ``warn`` receives what went wrong (the step's logger, so it shows in the run's log)."""

    def __init__(self, timeout: float | None = None, client: Any = None):
        self.timeout = timeout_s() if timeout is None else timeout
        self._client = client
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls) -> LineageEmitter | None:
        """An emitter when OpenLineage is configured, else None (off)."""
        return cls() if configured() else None

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                # the OpenLineage client: loaded only when OpenLineage is on
                from openlineage.client import OpenLineageClient

                self._client = OpenLineageClient()
            return self._client

    def emit(self, event: Any, warn: Callable[[str], None] = log.warning) -> bool:
        """Send ``event``; True when it was sent within the timeout. Never raises."""
        failure: list[BaseException] = []

        def send() -> None:
            try:
                self.client().emit(event)
            except BaseException as error:
                failure.append(error)

        state = getattr(event, "eventType", None)
        what = f"OpenLineage {getattr(state, 'value', None) or type(event).__name__}"
        sender = threading.Thread(target=send, name="openlineage-emit", daemon=True)
        sender.start()
        sender.join(self.timeout)
        if sender.is_alive():
            warn(f"{what} event not sent within {self.timeout:g} s ({TIMEOUT_VAR}); given up")
            return False
        if failure:
            error = failure[0]
            warn(f"{what} event not sent: {type(error).__name__}: {str(error)[:300]}")
            return False
        return True
