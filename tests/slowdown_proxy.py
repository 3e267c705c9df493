"""A throttling S3 in front of a real one: an HTTP proxy on 127.0.0.1 that answers a share of
requests with S3's ``503 SlowDown`` (as S3 does when a prefix takes more requests than it can
scale to) and forwards the rest to the S3 server behind it, moto's in the tests.

    with slowdown_proxy(s3_server.endpoint_url, every=2) as proxy:  # every 2nd request: 503
        ... MEDALLION_S3_ENDPOINT=proxy.url ...
        proxy.throttled  # how many it answered 503
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from tests.local_http import serving

SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message><RequestId>proxy</RequestId></Error>"
)
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection"}


@dataclass
class Proxy:
    url: str
    every: int  # answer 503 to every n-th request (0: none)
    burst: int = 1  # ... and to the burst - 1 requests after it (S3 throttles in runs)
    requests: int = 0
    throttled: int = 0


@contextmanager
def slowdown_proxy(upstream: str, every: int = 5, burst: int = 1) -> Iterator[Proxy]:
    target = urlsplit(upstream)
    lock = threading.Lock()
    proxy = Proxy("", every, burst)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            with lock:
                proxy.requests += 1
                throttle = proxy.every > 0 and proxy.requests % proxy.every < proxy.burst
                proxy.throttled += throttle
            if throttle:
                self.send_response(503)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(SLOW_DOWN)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(SLOW_DOWN)
                return
            connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            connection.request(self.command, self.path, body=body, headers=headers)
            answer = connection.getresponse()
            data = answer.read()
            self.send_response(answer.status)
            head = self.command == "HEAD"  # its Content-Length is the object's, with no body
            for name, value in answer.getheaders():
                if name.lower() not in HOP_BY_HOP and (head or name.lower() != "content-length"):
                    self.send_header(name, value)
            if not head:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            connection.close()

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as url:
        proxy.url = url
        yield proxy
