"""``medallion control profile``: the profile each pipeline runs under, and an operator's
override of it (``all`` for every pipeline; ``default`` gives a pipeline its profiles.yaml
profile back)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from medallion_assets.cli.common import fail, load, operator, project_option
from medallion_assets.cli.control_cmd import format_option, open_plane
from medallion_assets.profiles.overrides import ProfileOverrides
from medallion_assets.profiles.profiles import ALL, DEFAULT, check_override, effective_profile


@click.command()
@click.argument("pipeline", metavar="[PIPELINE|all]", required=False)
@click.argument("profile_name", metavar="[PROFILE|default]", required=False)
@click.option("--reason", default=None, help="Why (kept in the audit log); needed to change.")
@click.option("--by", "changed_by", default=None, help="Who (default: user@host).")
@format_option
@project_option
def profile(
    pipeline: str | None,
    profile_name: str | None,
    reason: str | None,
    changed_by: str | None,
    fmt: str,
    project: Path,
) -> None:
    """Show the profile each pipeline runs under and why; with PIPELINE (or ``all``) and
    PROFILE, put it in that profile from the next tick on, without a redeploy (``default``
    clears the override)."""
    catalog = load(project)
    store = open_plane(project).store()
    if profile_name is not None:
        assert pipeline is not None  # click fills the arguments in order
        problem = check_override(catalog.profiles, catalog.pipelines, pipeline, profile_name)
        if problem:
            fail(problem)
        if not reason:
            fail("say why with --reason (it is kept in the audit log)")
        who = operator(changed_by)
        override = ProfileOverrides(store).set(pipeline, profile_name, reason, who)
        whom = "every pipeline" if pipeline == ALL else pipeline
        what = (
            "override cleared (profiles.yaml decides)"
            if profile_name == DEFAULT
            else f"profile {profile_name}"
        )
        click.echo(f"{whom}: {what}, by {who} at {override.changed_at}")
    if catalog.profiles is None:
        fail("the project has no metadata/profiles.yaml: every pipeline runs without a profile")
    overrides = ProfileOverrides(store).names()
    if pipeline in (None, ALL):
        wanted = sorted(catalog.pipelines)
    elif pipeline in catalog.pipelines:
        wanted = [pipeline]
    else:
        fail(f"unknown pipeline {pipeline!r}: {', '.join(sorted(catalog.pipelines))}")
    effective = [effective_profile(catalog.profiles, p, overrides) for p in wanted]
    if fmt == "json":
        rows = [{"pipeline": e.pipeline, "profile": e.name, "source": e.source} for e in effective]
        click.echo(json.dumps({"overrides": overrides, "pipelines": rows}, indent=2))
        return
    for e in effective:
        click.echo(f"{e.pipeline:<24} {e.describe()}")
