"""The ``medallion`` command: lineage, impact, catalog, plan, split, PII trace, run, control."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from typing import Any

import click

from medallion_assets.catalog import CatalogError
from medallion_assets.cli.audit_cmd import audit
from medallion_assets.cli.backfill_cmd import backfill
from medallion_assets.cli.build_cmd import build
from medallion_assets.cli.catalog_cmd import catalog
from medallion_assets.cli.common import does_not_load, mask_output
from medallion_assets.cli.control_cmd import control
from medallion_assets.cli.demo_cmd import demo_data
from medallion_assets.cli.dev_cmd import dev
from medallion_assets.cli.diff_cmd import diff
from medallion_assets.cli.doctor_cmd import doctor
from medallion_assets.cli.env_cmd import env, promote
from medallion_assets.cli.export_cmd import export
from medallion_assets.cli.graph_cmds import impact, split, trace_pii
from medallion_assets.cli.init_cmd import init
from medallion_assets.cli.jars_cmd import jars
from medallion_assets.cli.lineage_cmd import lineage
from medallion_assets.cli.plan_cmd import plan
from medallion_assets.cli.profile_cmd import profile
from medallion_assets.cli.recovery_cmd import recovery_paths
from medallion_assets.cli.run_cmd import run
from medallion_assets.cli.schema_cmd import schema
from medallion_assets.cli.settings_cmd import settings
from medallion_assets.cli.simulate_cmd import simulate_cmd
from medallion_assets.cli.table_cmd import table
from medallion_assets.cli.throttle_cmd import throttle
from medallion_assets.errors import ResourceError
from medallion_assets.io.openlineage import configured as lineage_configured
from medallion_assets.settings import MedallionSettings


class MedallionGroup(click.Group):
    """Errors whose message is complete for an operator end every command the same way: one
    clear message and exit 2, never a traceback (a damaged control store, an unreachable S3
    endpoint, a project that does not load)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ResourceError as error:
            click.echo(f"error: {error}", err=True)
            ctx.exit(2)
        except CatalogError as error:
            does_not_load(error.root, error)


@click.group(cls=MedallionGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.pass_context
def cli(context: click.Context) -> None:
    """medallion: a metadata-driven medallion ETL on Dagster and Spark."""

    # The environment is read once per command, here; commands take these settings
    # (`cli.common.settings_for`), with their own --project for the derived defaults.
    context.obj = MedallionSettings.from_env(os.environ)
    mask_output(context.obj.secrets)


for command in (
    init,
    lineage,
    impact,
    recovery_paths,
    simulate_cmd,
    backfill,
    plan,
    split,
    trace_pii,
    catalog,
    demo_data,
    jars,
    run,
    doctor,
    dev,
    build,
    export,
    control,
    audit,
    settings,
    table,
    env,
    promote,
    diff,
):
    cli.add_command(command)
control.add_command(schema)
control.add_command(profile)
control.add_command(throttle)


def main() -> None:
    try:
        cli.main(prog_name="medallion")
    except SystemExit as done:
        _leave(done.code)


def _leave(code: int | str | None) -> None:
    """End the process without the interpreter's teardown when nothing is left to finish:
    after a run, freeing the objects of Dagster, pandera, pyiceberg and Spark's gateway one by
    one took ~1.2 s of the starter project's ~17 s. Output and log records are flushed and
    Spark's driver JVM is ended (``end_driver``) first, so nothing goes on writing after it.
    A thread still working (not a daemon) or OpenLineage's client, whose transport may hold
    events, get the ordinary exit, which waits for them."""
    working = [
        t for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()
    ]
    if working or lineage_configured():
        sys.exit(code)
    if isinstance(code, str):
        click.echo(code, err=True)
    if "pyspark" in sys.modules:
        # Spark: loaded only by the commands that ran it (this one did)
        from medallion_assets.runtime.spark_session import end_driver

        end_driver()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (`| head`)
            stream.flush()
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)
