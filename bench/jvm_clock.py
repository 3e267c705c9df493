"""Time a Python process spends waiting on Spark's JVM: every Py4J method call, summed.

Both sides of benchmark D install it before their clock starts, so their wall time splits into
"in the JVM" (Spark planning and running jobs, the same SQL on the same data) and "outside the
JVM" (Python: the script, or our runtime plus Dagster). The second part is where orchestration
overhead lives; the first is where JIT warm-up and machine noise live. Data Spark streams back
over a socket (``toArrow``) is read outside a Py4J call and so counts as outside.

    clock = install()
    ...
    clock()  # seconds spent inside Py4J calls so far
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


def install() -> Callable[[], float]:
    from py4j.java_gateway import JavaMember

    original = JavaMember.__call__
    spent = [0.0]
    inside = threading.local()  # a call made while one is running (a callback) is not re-counted

    def timed_call(self: Any, *args: Any) -> Any:
        if getattr(inside, "depth", 0):
            return original(self, *args)
        inside.depth = 1
        started = time.perf_counter()
        try:
            return original(self, *args)
        finally:
            spent[0] += time.perf_counter() - started
            inside.depth = 0

    JavaMember.__call__ = timed_call  # type: ignore[method-assign]
    return lambda: spent[0]
