"""Dagster's SQLite event log with its connections kept: the event log of the instance
``medallion`` writes (``instance.py``), same files, same tables, same watch, faster writes.

Every event a step yields (start, output, materialization, each check's evaluation, success)
and every planned event at a run's creation is one write to the run's SQLite file, and an
asset or check event one or two more to the index file. Dagster's ``SqliteEventLogStorage``
makes a new SQLAlchemy engine for each of those writes, compiles the statement again for it,
commits with a full sync and closes the file, which checkpoints its write-ahead log: ~7 ms per
event on this machine, ~0.4 s per table in a run (about 20 events), and 4 s of planned events
before a 20-table run's first step (profiled: 15 s of a 20,000-order silver and gold refresh's
63 s of thread time were in ``store_event``).

``SqliteEventLog`` keeps one engine and one connection per file for the few files a process is
writing (the index and the most recent runs; an older run's connection is closed when a newer
one needs its place) and syncs at commit as SQLite's write-ahead log allows
(``synchronous=NORMAL``: a commit survives the process being killed; only a power cut can lose
the last ones, which for a log of events is the trade SQLite's own documentation recommends).
Access stays serialized by Dagster's lock, as before; a forked child opens its own.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import StaticPool

from medallion_assets.adapters.dagster_internals import (
    SQLITE_BUSY_TIMEOUT_SECONDS,
    ConfigurableClassData,
    SqliteEventLogStorage,
)

# Files kept open per process: the index, the runs being written, a few being read.
KEPT_FILES = 8


def _sync_normal(dbapi_connection: Any, _record: object) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


class SqliteEventLog(SqliteEventLogStorage):
    """``SqliteEventLogStorage`` (same ``base_dir`` config) whose connections are kept."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._engines_pid = os.getpid()
        super().__init__(base_dir, inst_data)

    @classmethod
    def from_config_value(  # type: ignore[override]
        cls, inst_data: ConfigurableClassData | None, config_value: dict[str, Any]
    ) -> SqliteEventLog:
        return cls(inst_data=inst_data, **config_value)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def _engine(self, shard: str) -> Engine:
        if self._engines_pid != os.getpid():  # a forked child: the parent's are not its own
            self._engines = OrderedDict()
            self._engines_pid = os.getpid()
        engine = self._engines.get(shard)
        if engine is not None:
            self._engines.move_to_end(shard)
            return engine
        engine = create_engine(
            self.conn_string_for_shard(shard),
            poolclass=StaticPool,  # one connection, used under the lock only
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
        )
        event.listen(engine, "connect", _sync_normal)
        self._engines[shard] = engine
        while len(self._engines) > KEPT_FILES:
            _, oldest = self._engines.popitem(last=False)
            oldest.dispose()
        return engine

    def _close_files(self) -> None:
        with self._db_lock:
            engines, self._engines = self._engines, OrderedDict()
        for engine in engines.values():
            engine.dispose()

    def wipe(self) -> None:
        self._close_files()  # the run files are deleted: no connection may outlive them
        super().wipe()

    def dispose(self) -> None:
        self._close_files()
        super().dispose()
