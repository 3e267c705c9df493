"""Exclusive build locks: one builder of a table (or of one partition) at a time, and one
``medallion run`` per project at a time.

Two runs building the same table at once both read the same current version and manifest,
both publish, and both load the warehouse: an append target gets every row twice. A lock per
(table, partition), taken by the step before it builds, publishes and loads, serializes them;
the second builder then finds the table already built from the same code and inputs and skips
it.

Where the lock lives follows where the control store lives, because that is what every run
worker of a deployment already shares:

- a SQLite control store (one machine): ``flock`` on a file under ``<lake>/_locks/``;
- a PostgreSQL control store (run workers on several hosts): a session advisory lock on the
  control database, held on a connection of its own.

Both die with their process: the kernel drops a ``flock`` when the last descriptor closes, and
PostgreSQL releases a session lock as soon as the holder's connection drops, which it does
when the process is killed. A ``kill -9`` never leaves a stale lock behind, so there is no
lease to expire and no "break the lock" command to get wrong.

    locks = build_locks("sqlite:////tmp/control.db", Path("/tmp/lake"))
    with locks.hold("table:gold.revenue", Holder.now("run-1"), wait_seconds=60) as held:
        if held: ...
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from medallion_assets.credentials import mask_credentials, url_secrets
from medallion_assets.errors import ResourceError

POLL_SECONDS = 0.5
HOLDER_WAIT_SECONDS = 2.0


@dataclass(frozen=True)
class Holder:
    """Who holds (or wants) a lock: a run, its process and host, and since when."""

    run_id: str
    pid: int
    host: str
    since: float

    @classmethod
    def now(cls, run_id: str) -> Holder:
        return cls(run_id, os.getpid(), socket.gethostname(), time.time())

    def describe(self) -> str:
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.since))
        run = f"run {self.run_id}, " if self.run_id else ""
        return f"{run}pid {self.pid} on {self.host}, started {started}"


OnWait = Callable[[Holder | None], None]


class BuildLocks(Protocol):
    def hold(
        self, name: str, holder: Holder, wait_seconds: float, on_wait: OnWait = ...
    ) -> AbstractContextManager[bool]:  # yields whether the lock is held
        ...


def build_locks(control_url: str, state_home: Path) -> BuildLocks:
    """The locks every builder of this lake shares (see the module docstring): advisory locks
    of the PostgreSQL control store, else files beside the embedded control store."""
    if control_url.startswith(("postgresql://", "postgres://")):
        return AdvisoryLocks(control_url)
    return FileLocks(Path(state_home) / "locks")


def table_lock_name(table: str, partition: str | None) -> str:
    """The lock one build of a table, or of one of its partitions, holds.

    >>> table_lock_name("silver.orders", None), table_lock_name("bronze.events", "2024-01-31")
    ('table:silver.orders', 'table:bronze.events[2024-01-31]')
    """
    return f"table:{table}" + (f"[{partition}]" if partition else "")


class FileLocks:
    """``flock`` locks, one file per lock name, holding the holder's JSON for waiters."""

    def __init__(self, folder: Path):
        self.folder = folder

    def path(self, name: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.=-]+", "_", name)
        return self.folder / f"{safe}.lock"

    @contextmanager
    def hold(
        self, name: str, holder: Holder, wait_seconds: float, on_wait: OnWait = lambda _h: None
    ) -> Iterator[bool]:
        path = self.path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if not _poll(lambda: _try_flock(fd), lambda: _read_holder(fd), wait_seconds, on_wait):
                yield False
                return
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps(asdict(holder)).encode(), 0)
                yield True
            finally:
                os.ftruncate(fd, 0)  # an unheld lock names no holder
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)  # the kernel does the same when the process dies


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _read_holder(fd: int) -> Holder | None:
    """Who holds the lock, or None while its new holder has yet to write itself in (the file
    is emptied on release, and a killed holder's leftover names a process that is gone)."""
    try:
        holder = Holder(**json.loads(os.pread(fd, 4096, 0)))
    except (OSError, ValueError, TypeError):
        return None
    return holder if holder.host != socket.gethostname() or _alive(holder.pid) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, another user's
    return True


class AdvisoryLocks:
    """PostgreSQL session advisory locks; the holder's identity is the connection's
    ``application_name``, so a waiter on another host can say who it waits for."""

    def __init__(self, url: str):
        self.url = url

    @contextmanager
    def hold(
        self, name: str, holder: Holder, wait_seconds: float, on_wait: OnWait = lambda _h: None
    ) -> Iterator[bool]:
        # the driver of the database in use, loaded only when it is used
        import psycopg

        key = lock_key(name)
        try:
            connecting = psycopg.connect(
                self.url, autocommit=True, connect_timeout=10, application_name=_tag(holder)
            )
        except psycopg.OperationalError as error:
            # psycopg's text spans lines; the driver's exception is dropped: a traceback would
            # print the URL unmasked.
            reason = " ".join(mask_credentials(str(error), url_secrets(self.url)).split())
            raise ResourceError(
                f"cannot connect to the control store {mask_credentials(self.url)} "
                f"(MEDALLION_CONTROL_URL) to take the lock {name!r}: {reason}. Check that the "
                "server is up and the URL, user and database are right"
            ) from None
        with connecting as connection:

            def take() -> bool:
                row = connection.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
                return bool(row and row[0])

            def current() -> Holder | None:
                # A bigint key shows in pg_locks as its high and low 32 bits.
                halves = ((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF)
                row = connection.execute(_HOLDER_SQL, halves).fetchone()
                return _untag(row[0]) if row else None

            if not _poll(take, current, wait_seconds, on_wait):
                yield False
                return
            try:
                yield True
            finally:
                # The server or the connection may have gone, and the lock with them.
                with suppress(psycopg.Error):
                    connection.execute("SELECT pg_advisory_unlock(%s)", (key,))


_HOLDER_SQL = """
SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.database = (
    SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid AND l.objsubid = 1
"""


def lock_key(name: str) -> int:
    """A signed 64-bit key for ``name`` (what ``pg_advisory_lock(bigint)`` takes)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def _tag(holder: Holder) -> str:
    # application_name keeps 63 bytes: pid, time and run id first, the host last (truncated).
    return f"medallion {holder.pid} {int(holder.since)} {holder.run_id[:8] or '-'} {holder.host}"[
        :63
    ]


def _untag(tag: str) -> Holder | None:
    parts = tag.split(" ", 4)
    if len(parts) != 5 or parts[0] != "medallion":
        return None
    _, pid, since, run_id, host = parts
    return Holder("" if run_id == "-" else run_id, int(pid), host, float(since))


def _poll(
    take: Callable[[], bool],
    holder: Callable[[], Holder | None],
    wait_seconds: float,
    on_wait: OnWait,
) -> bool:
    """Take the lock, waiting up to ``wait_seconds``; ``on_wait`` hears once who holds it."""
    if take():
        return True
    deadline = time.monotonic() + wait_seconds
    # A holder takes the lock an instant before it writes who it is: ask again, briefly.
    who, asked = holder(), time.monotonic() + HOLDER_WAIT_SECONDS
    while who is None and time.monotonic() < asked:
        time.sleep(0.05)
        if take():
            return True
        who = holder()
    on_wait(who)
    while time.monotonic() < deadline:
        time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))
        if take():
            return True
    return False
