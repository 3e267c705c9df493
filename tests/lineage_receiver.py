"""An OpenLineage HTTP receiver on 127.0.0.1 for tests: it answers ``POST /api/v1/lineage``
(the client's default endpoint) with 200 and keeps every event it was sent, in order."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.local_http import serving


@dataclass
class Receiver:
    url: str
    events: list[dict[str, Any]] = field(default_factory=list)
    paths: set[str] = field(default_factory=set)
    delay_s: float = 0.0  # answer this late (a slow collector)
    status: int = 200  # answer with this status (a broken collector)


@contextmanager
def lineage_receiver() -> Iterator[Receiver]:
    lock = threading.Lock()
    receiver = Receiver("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with lock:
                receiver.events.append(json.loads(body))
                receiver.paths.add(self.path)
            if receiver.delay_s:
                threading.Event().wait(receiver.delay_s)
            self.send_response(receiver.status)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as url:
        receiver.url = url
        yield receiver


# --- what the OpenLineage spec (2-0-2) requires of a run event ---------------------------------
# The spec's JSON schema itself is not reachable from the machines the tests run on (it is not
# in openlineage-python's wheel or sdist, and no package on PyPI ships it), so the required
# shape is checked here field by field, as the spec's RunEvent, Run, Job, Dataset, BaseFacet
# and columnLineage definitions state it. With the spec's OpenLineage.json vendored (Apache-2.0,
# with its licence), ``check_event`` is where each event would be validated against it.

EVENT_TYPES = {"START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"}


def check_event(event: dict[str, Any]) -> None:
    """Raise AssertionError naming the first way ``event`` breaks the spec."""
    import uuid
    from datetime import datetime
    from urllib.parse import urlsplit

    def uri(value: Any, where: str) -> None:
        assert isinstance(value, str) and urlsplit(value).scheme, f"{where}: not a URI: {value!r}"

    def facets(found: Any, where: str) -> None:
        assert isinstance(found, dict), f"{where}: facets must be an object"
        for name, facet in found.items():
            assert not name.startswith("_"), f"{where}.{name}: facet names must not start with _"
            uri(facet.get("_producer"), f"{where}.{name}._producer")
            uri(facet.get("_schemaURL"), f"{where}.{name}._schemaURL")

    def dataset(found: dict[str, Any], where: str) -> None:
        assert isinstance(found.get("namespace"), str) and found["namespace"], where
        assert isinstance(found.get("name"), str) and found["name"], where
        facets(found.get("facets", {}), f"{where}.facets")
        for kind in ("inputFacets", "outputFacets"):
            facets(found.get(kind, {}), f"{where}.{kind}")
        lineage = found.get("facets", {}).get("columnLineage")
        if lineage is not None:
            for column, spec in lineage["fields"].items():
                for field_ in spec["inputFields"]:
                    assert {"namespace", "name", "field"} <= set(field_), f"{where}.{column}"
                    for step in field_.get("transformations", []):
                        assert step["type"] in ("DIRECT", "INDIRECT"), f"{where}.{column}"

    assert event.get("eventType") in EVENT_TYPES, event.get("eventType")
    datetime.fromisoformat(event["eventTime"])  # date-time
    uri(event.get("producer"), "producer")
    uri(event.get("schemaURL"), "schemaURL")
    uuid.UUID(event["run"]["runId"])
    facets(event["run"].get("facets", {}), "run.facets")
    parent = event["run"].get("facets", {}).get("parent")
    if parent is not None:
        uuid.UUID(parent["run"]["runId"])
        assert parent["job"]["namespace"] and parent["job"]["name"], "run.facets.parent.job"
    assert event["job"]["namespace"] and event["job"]["name"], "job"
    facets(event["job"].get("facets", {}), "job.facets")
    for kind in ("inputs", "outputs"):
        for i, found in enumerate(event.get(kind, [])):
            dataset(found, f"{kind}[{i}]")


@contextmanager
def openlineage_env(**variables: str) -> Iterator[None]:
    """Set OpenLineage variables in os.environ (e.g. ``OPENLINEAGE_URL``), and on exit put every
    OPENLINEAGE* variable back as it was, including those the client adds to os.environ itself
    from OPENLINEAGE_URL (OPENLINEAGE__TRANSPORT__...), which monkeypatch would not undo."""
    import os

    before = {k: v for k, v in os.environ.items() if k.startswith("OPENLINEAGE")}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name in [n for n in os.environ if n.startswith("OPENLINEAGE")]:
            del os.environ[name]
        os.environ.update(before)


def http_client(url: str) -> Any:
    """An OpenLineageClient sending to ``url`` over HTTP, with no environment involved."""
    from openlineage.client import OpenLineageClient
    from openlineage.client.transport.http import HttpConfig, HttpTransport

    return OpenLineageClient(transport=HttpTransport(HttpConfig(url=url, timeout=5)))
