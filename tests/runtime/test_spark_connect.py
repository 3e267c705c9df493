"""The runtime on a real Spark Connect server: the project's own ``spark_session`` with a
``sc://`` URL gives a remote session that runs Spark SQL, writes and reads Parquet, and builds
the minimal project's bronze, silver and gold tables into a lake.

pyspark refuses a remote session while a classic one runs in the same process
(``[SESSION_ALREADY_EXIST]``), and once a remote session was made it sets
``SPARK_CONNECT_MODE_ENABLED`` so later classic builders fail (``[CONNECT_URL_NOT_SET]``). The
suite's ``spark`` fixture is a classic session, so every step on Connect runs in a fresh Python
process: the ``client_*`` functions below, called through ``on_connect``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from medallion_assets.settings import MedallionSettings
from tests.conftest import REPO
from tests.spark_connect_server import (
    SparkConnectServer,
    find_java,
    running_spark_connect_server,
)

pytestmark = pytest.mark.slow

MINIMAL = Path(__file__).parents[1] / "catalog" / "minimal_project"
CLIENT_TIMEOUT = 300  # seconds for one client process, session included
RESULT = "RESULT "


# --- steps run in the client process ------------------------------------------------------------


def connect_session(remote: str) -> Any:
    from medallion_assets.runtime.spark_session import spark_session
    from medallion_assets.settings import MedallionSettings

    return spark_session(MedallionSettings.from_env({"MEDALLION_SPARK_REMOTE": remote}))


def client_session_facts(remote: str) -> dict[str, Any]:
    from pyspark import SparkContext

    session = connect_session(remote)
    pid = session.sql("SELECT reflect('java.lang.ProcessHandle', 'current') AS pid").first()
    return {
        "module": type(session).__module__,
        "local_jvm": SparkContext._gateway is not None,
        "server_pid": int(pid["pid"]),
        "version": session.version,
        "time_zone": session.conf.get("spark.sql.session.timeZone"),
        "shuffle_partitions": session.conf.get("spark.sql.shuffle.partitions"),
    }


def client_sql(remote: str) -> list[dict[str, Any]]:
    session = connect_session(remote)
    frame = session.sql(
        "SELECT country, sum(amount) AS revenue, count(*) AS orders "
        "FROM VALUES ('DE', 10), ('DE', 5), ('FR', 7) AS t(country, amount) "
        "GROUP BY country ORDER BY country"
    )
    return [row.asDict() for row in frame.collect()]


def client_step_sessions(remote: str) -> dict[str, Any]:
    """Two steps on threads, each on a step session of the remote one: same view name, own rows."""
    import threading

    from medallion_assets.runtime.spark_session import step_session
    from medallion_assets.settings import MedallionSettings

    settings = MedallionSettings.from_env({"MEDALLION_SPARK_REMOTE": remote})
    base = connect_session(remote)
    barrier = threading.Barrier(2)
    seen: dict[str, Any] = {}

    def step(name: str, value: int) -> None:
        session = step_session(base, settings, name)
        session.sql(f"SELECT {value} AS v").createOrReplaceTempView("input_rows")
        barrier.wait()
        seen[name] = [r.v for r in session.sql("SELECT v FROM input_rows").collect()]

    threads = [threading.Thread(target=step, args=(n, v)) for n, v in (("a", 1), ("b", 2))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seen["base_sees"] = [t.name for t in base.catalog.listTables()]
    return seen


def client_parquet_round_trip(remote: str, folder: str) -> dict[str, Any]:
    session = connect_session(remote)
    rows = [(1, "DE", 10.5), (2, "FR", 7.0), (3, "DE", 1.25)]
    written = session.createDataFrame(rows, "order_id long, country string, amount double")
    written.write.mode("overwrite").parquet(folder)
    back = session.read.parquet(folder).orderBy("order_id")
    arrow = back.toArrow()  # what the warehouse load uses
    return {
        "rows": [list(r) for r in back.collect()],
        "arrow_rows": arrow.num_rows,
        "arrow_columns": arrow.column_names,
    }


def client_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE")
    }
    env.update(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    return env


def on_connect(server: SparkConnectServer, step: str, **params: Any) -> Any:
    """Run ``step`` (a ``client_*`` function of this module) in a fresh Python process with the
    server's URL and ``params``; returns what it returned."""
    code = (
        "import json, sys\n"
        "from tests.runtime import test_spark_connect as steps\n"
        "result = getattr(steps, sys.argv[1])(sys.argv[2], **json.loads(sys.argv[3]))\n"
        f"print({RESULT!r} + json.dumps(result))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code, step, server.url, json.dumps(params)],
        cwd=REPO,
        env=client_env(),
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    (line,) = [x for x in completed.stdout.splitlines() if x.startswith(RESULT)]
    return json.loads(line.removeprefix(RESULT))


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkConnectServer]:
    if find_java() is None:
        pytest.skip("Java not found ($JAVA_HOME/bin/java or java on PATH): Spark needs a JVM")
    with running_spark_connect_server(tmp_path_factory.mktemp("spark_connect")) as server:
        yield server


def orders_file(*rows: dict[str, object], broken: int = 0) -> bytes:
    lines = [json.dumps(r) for r in rows] + ["{not json"] * broken
    return ("\n".join(lines) + "\n").encode()


def test_the_projects_session_is_a_spark_connect_client_of_the_server(connect_server):
    facts = on_connect(connect_server, "client_session_facts")
    assert "connect" in facts["module"]
    assert not facts["local_jvm"]  # no JVM in the client: the work happens in the server
    assert facts["server_pid"] == connect_server.pid
    assert facts["version"].startswith("4.")
    auto = MedallionSettings.from_env({}).shuffle_partitions  # 8 per core, merged by size
    assert (facts["time_zone"], facts["shuffle_partitions"]) == ("UTC", str(auto))


def test_spark_sql_runs_on_the_server(connect_server):
    assert on_connect(connect_server, "client_sql") == [
        {"country": "DE", "revenue": 15, "orders": 2},
        {"country": "FR", "revenue": 7, "orders": 1},
    ]


def test_steps_on_threads_get_sessions_of_their_own_on_the_server(connect_server):
    seen = on_connect(connect_server, "client_step_sessions")
    assert seen == {"a": [1], "b": [2], "base_sees": []}


def test_parquet_written_through_connect_reads_back_there_and_here(connect_server, tmp_path):
    folder = tmp_path / "orders"
    result = on_connect(connect_server, "client_parquet_round_trip", folder=str(folder))
    expected = [[1, "DE", 10.5], [2, "FR", 7.0], [3, "DE", 1.25]]
    assert result["rows"] == expected
    assert (result["arrow_rows"], result["arrow_columns"]) == (3, ["order_id", "country", "amount"])
    assert list(folder.glob("part-*.parquet"))  # the server wrote to this machine's disk
    here = pq.read_table(folder).to_pandas().sort_values("order_id")
    assert here.values.tolist() == expected
