"""Lines a native library writes straight to the process's stderr (Arrow's C++ S3 filesystem
under pyiceberg: ``s3fs.cc:... SlowDown``, retried and harmless) go to the Spark log, not
between a run's lines; the run's own ``error:`` lines stay on the console. A real process: the
redirect is of file descriptor 2, which a test runner's capture would hide."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from tests.conftest import REPO

SCRIPT = textwrap.dedent(
    """
    import os, sys
    import click
    from medallion_assets.cli.run_cmd import with_spark_log
    from medallion_assets.settings import MedallionSettings

    settings = with_spark_log(MedallionSettings.from_env(os.environ))
    with_spark_log(settings)  # twice, as build after a run's set-up: still one redirect
    os.write(2, b"/arrow/cpp/src/arrow/filesystem/s3fs.cc:2250: SlowDown\\n")  # as C++ does
    click.echo("error: the run failed; see the messages above", err=True)
    print(settings.spark_log_file)
    """
)


def test_native_stderr_goes_to_the_spark_log_and_the_runs_lines_stay(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDALLION_")}
    env["MEDALLION_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=True,
    )
    assert done.stderr.strip() == "error: the run failed; see the messages above"
    log = tmp_path / "home" / "logs" / "spark.log"
    assert done.stdout.strip() == str(log)
    assert "s3fs.cc:2250: SlowDown" in log.read_text()
