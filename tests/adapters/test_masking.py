"""A step's log lines and the exception it fails with reach Dagster's event log, the console and
the compute logs with the settings' passwords masked, through a real Dagster instance."""

# no "from __future__ import annotations": Dagster reads the hints

import json
from pathlib import Path
from urllib.parse import quote

import dagster as dg

from medallion_assets.adapters.masking import masked_step
from medallion_assets.adapters.resources import ControlResource

SECRET = "s3/cr#t? p@ss:wörd%"


def printed_forms(secret: str) -> list[str]:
    """How a secret may sit in a log file or a serialized event."""
    return [secret, quote(secret, safe=""), json.dumps(secret)[1:-1], "p@ss:w"]


def leaks(text: str, secret: str = SECRET) -> list[str]:
    return [form for form in printed_forms(secret) if form in text]


def files_text(folder: Path) -> str:
    return "\n".join(
        p.read_bytes().decode("utf-8", "replace") for p in folder.rglob("*") if p.is_file()
    )


@dg.asset(required_resource_keys={"control"})  # masked_step reads the run's settings there
@masked_step("control")
def leaky(context: dg.AssetExecutionContext):
    context.log.info(f"connecting with the password {SECRET}")
    context.log.warning("retrying postgresql://loader:%s@db:5432/x", "an/other#pw")
    try:
        raise OSError(f"server said: bad password {SECRET!r}")
    except OSError as error:
        raise ConnectionError(f"cannot connect to postgresql://loader:{SECRET}@db/x") from error
    yield dg.MaterializeResult()


def test_a_failing_step_leaks_no_password_to_the_event_log_console_or_compute_logs(
    tmp_path, monkeypatch, capfd
):
    url = f"postgresql://loader:{quote(SECRET, safe='')}@127.0.0.1:1/analytics"
    monkeypatch.setenv("MEDALLION_WAREHOUSE_URL", url)
    (tmp_path / "dagster").mkdir()
    with dg.DagsterInstance.local_temp(str(tmp_path / "dagster")) as instance:
        control = ControlResource(project_root=str(tmp_path))
        result = dg.materialize(
            [leaky], instance=instance, raise_on_error=False, resources={"control": control}
        )
        records = instance.all_logs(result.run_id)
        serialized = "\n".join(dg.serialize_value(r) for r in records)
    console = capfd.readouterr()

    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    error = failure.step_failure_data.error
    assert "cannot connect to postgresql://loader:***@db/x" in error.to_string()
    assert "server said: bad password '***'" in error.to_string()  # the cause is masked too
    assert "connecting with the password ***" in serialized
    assert "retrying postgresql://loader:***@db:5432/x" in serialized
    assert leaks(serialized) == [] and leaks(serialized, "an/other#pw") == []
    assert leaks(console.out + console.err) == []
    on_disk = files_text(tmp_path / "dagster")
    assert "cannot connect to postgresql://loader:***@db/x" in on_disk  # logs were written
    assert leaks(on_disk) == []
