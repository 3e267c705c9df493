"""``medallion dev``: the Dagster UI (``dagster dev``) on a project, on the instance its
``medallion run`` records into, so the runs, checks and asset graph of the CLI are the UI's."""

from __future__ import annotations

import errno
import os
import signal
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from medallion_assets.cli.common import fail, load, project_option, settings_for, spark_log_of

if TYPE_CHECKING:
    from medallion_assets.catalog.operations import ProfilesFile

QUIET = "ignore:Function `dev_command` is superseded"  # a PYTHONWARNINGS filter


@click.command("dev")
@project_option
@click.option("--port", type=click.IntRange(1, 65535), default=3000, show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address the UI listens on.")
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="warning",
    show_default=True,
    help="What Dagster's webserver and daemon print (info: every sensor tick and run launch).",
)
def dev(project: Path, port: int, host: str, log_level: str) -> None:
    """Open the Dagster UI on the project (`dagster dev`): asset graph, runs, checks, schedules.

    It uses the Dagster instance `medallion run` records into ($DAGSTER_HOME, else
    $MEDALLION_HOME/dagster, by default <project>/.medallion/dagster, created with telemetry
    off) and loads the project through the installed code location
    (MEDALLION_PROJECT=<project>, -m medallion_assets.definitions): no workspace.yaml is
    needed. A project that does not load is reported, as by `medallion catalog validate`,
    before Dagster starts. Ctrl-C stops it.
    """
    if not ((project / "metadata").is_dir() or (project / "sql").is_dir()):
        fail(
            f"{project} is not a medallion project (no metadata/ or sql/ folder); create one "
            f"with: medallion init {project}"
        )
    catalog = load(project)  # one line per problem and exit 2, before anything starts
    port_is_free(host, port)
    home = instance_home(project, catalog.profiles)
    dagster = Path(sys.executable).parent / "dagster"
    command = [str(dagster), "dev", "-m", "medallion_assets.definitions"]
    command += ["-h", host, "-p", str(port), "--log-level", log_level]
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "MEDALLION_PROJECT": str(project.resolve()),
        # The runs' Spark drivers print their banners, log4j lines and Java traces there, not
        # on this console (as `medallion run` does).
        "MEDALLION_SPARK_LOG": str(spark_log_of(settings_for(project))),
        # Dagster's advice to use `dg dev` instead: dg needs a Python package with a
        # [tool.dg] pyproject.toml, which a medallion project folder is not; the filter hides
        # that one warning, in every child process.
        "PYTHONWARNINGS": ",".join(filter(None, [os.environ.get("PYTHONWARNINGS"), QUIET])),
    }
    click.echo(
        f"Dagster UI of project {catalog.project.name} at http://{host}:{port} (instance "
        f"{home}); Ctrl-C stops it"
    )
    sys.stdout.flush()
    sys.stderr.flush()
    # exec, not a child process: Ctrl-C and any other signal reach `dagster dev` itself (it
    # stops its webserver, daemon and code server), and its exit code is the command's.
    # `dagster dev` stops on SIGTERM by treating it as SIGINT; started in the background by a
    # shell without job control (`medallion dev &` in a script), SIGINT is ignored, an ignored
    # signal stays ignored across exec, and SIGTERM was then ignored too. Back to the default:
    # the new Python turns SIGINT into KeyboardInterrupt and `dagster dev` SIGTERM with it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        os.execve(dagster, command, env)
    except OSError as error:
        fail(f"could not start {dagster}: {error}; is dagster-webserver installed in this venv?")


def instance_home(project: Path, profiles: ProfilesFile | None) -> Path:
    """The instance folder of ``medallion run`` (``$DAGSTER_HOME``, else the project's own),
    its dagster.yaml written as ``medallion run`` writes it: telemetry off, run monitoring on,
    the profiles' run limits (an operator's own dagster.yaml is left as it is)."""
    # Dagster: loaded only by the commands that run it (`medallion --help` stays quick)
    from medallion_assets.adapters.instance import dagster_home, project_instance

    # The same function `medallion run` opens it with: one dagster.yaml for both, and the
    # instance's storage is made here, before the webserver and the daemon open it at once.
    with project_instance(project, profiles=profiles):
        pass
    return dagster_home(project)


def port_is_free(host: str, port: int) -> None:
    """Exit 2 in one line when something already listens on ``host:port`` (another UI):
    `dagster dev` would otherwise start its daemon and code server, then fail."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the webserver binds
        try:
            probe.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                fail(f"port {port} on {host} is in use (another Dagster UI?): add --port N")
            fail(f"cannot listen on {host}:{port}: {error.strerror or error}")
