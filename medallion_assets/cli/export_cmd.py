"""``medallion export airflow|prefect|kestra --out DIR``."""

from __future__ import annotations

from pathlib import Path

import click

from medallion_assets.cli.common import load, project_option


@click.command("export")
@click.argument("target", type=click.Choice(["airflow", "prefect", "kestra"]))
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="The folder to write into (created; files of the same names are replaced).",
)
@click.option(
    "--medallion",
    default="medallion",
    show_default=True,
    help="The medallion command as the orchestrator's workers run it (a name on their PATH, "
    "or a path).",
)
@click.option(
    "--project-path",
    type=click.Path(path_type=Path),
    default=None,
    help="The project's path on the orchestrator's workers (default: this project's path).",
)
@project_option
def export(
    target: str, out: Path, medallion: str, project_path: Path | None, project: Path
) -> None:
    """The project's pipelines as TARGET's code: one DAG or flow per enabled pipeline on its
    schedule, one task per table running `medallion build TABLE`, dependencies from lineage,
    retries from policies.yaml.

    \b
    medallion export airflow --out ~/airflow/dags
    medallion export prefect --out flows/
    medallion export kestra --out kestra/ --medallion /opt/medallion/bin/medallion
    """
    # the exporters: loaded only by `medallion export`
    from medallion_assets.export.orchestrators import generate

    catalog = load(project)
    where = project_path or project.resolve()
    files = generate(catalog, target, where, medallion)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in sorted(files.items()):
        (out / name).write_text(text)
        click.echo(f"wrote {out / name}")
    click.echo(f"{len(files)} {target} file(s), one per enabled pipeline")
