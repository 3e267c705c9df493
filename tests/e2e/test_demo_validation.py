"""TheWorldShop's validation story on real Spark through the project's Dagster job: the vendor's
'UK' country codes fail the blocking accepted_values check on silver.addresses_validated, nothing
is published, `medallion impact` names what was protected; the demo's malformed records are
counted in bronze quarantine and the warn check reports the rate."""

from __future__ import annotations

import json

import dagster as dg
import pytest
from click.testing import CliRunner

from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.translator import DatasetTranslator, table_key
from medallion_assets.catalog import load_catalog
from medallion_assets.cli import cli
from medallion_assets.demo import DemoSettings, generate, write_files
from medallion_assets.io.object_store import LocalFolderObjectStore
from medallion_assets.lake import Lake
from tests.conftest import copy_demo_project

pytestmark = pytest.mark.slow

FEED, SILVER = "bronze.address_validation_feed", "silver.addresses_validated"


def test_the_vendor_uk_codes_block_silver_and_impact_names_what_was_protected(
    spark, tmp_path, monkeypatch
):
    root = copy_demo_project(tmp_path / "theworldshop")
    home = root / ".medallion"
    monkeypatch.setenv("MEDALLION_HOME", str(home))
    for name in ("MEDALLION_LAKE", "MEDALLION_S3_ENDPOINT", "MEDALLION_WAREHOUSE_URL"):
        monkeypatch.delenv(name, raising=False)
    catalog = load_catalog(root)
    files = generate(catalog, DemoSettings(rows=400, days=1, seed=7, vendor_uk_rate=0.15))
    write_files(files, LocalFolderObjectStore(home / "s3"))
    malformed = sum(f.malformed for f in files if f.source == "address_validation_feed")
    read = sum(f.rows + f.malformed for f in files if f.source == "address_validation_feed")
    assert malformed > 0

    job = definitions_for(
        catalog, DatasetTranslator(catalog)
    ).resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(
        asset_selection=[table_key(FEED), table_key(SILVER)],
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    checks = {
        (".".join(e.event_specific_data.asset_key.path), e.event_specific_data.check_name): (
            e.event_specific_data
        )
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }

    # Bronze: published; its malformed records are in quarantine and the warn check says so.
    rate = checks[(FEED, "quarantine_rate")]
    assert not rate.passed and rate.severity == dg.AssetCheckSeverity.WARN
    assert rate.metadata["failing_rows"].value == malformed
    assert rate.metadata["total_rows"].value == read
    assert f"{malformed:,} of {read:,} records quarantined" in rate.metadata["message"].value
    lake = Lake.local(home / "lake")
    assert lake.current(FEED) is not None

    # Silver: the 'UK' codes fail the blocking check; nothing is published.
    iso = checks[(SILVER, "iso_country_code")]
    assert not iso.passed and iso.severity == dg.AssetCheckSeverity.ERROR
    assert iso.metadata["failing_rows"].value > 0
    assert "e.g. 'UK'" in iso.metadata["message"].value
    assert lake.current(SILVER) is None
    assert not result.success

    impact = CliRunner().invoke(cli, ["impact", SILVER, "--project", str(root)])
    assert impact.exit_code == 0, impact.output
    assert f"BLOCKED: the newest output of {SILVER} failed blocking checks" in impact.output
    assert "iso_country_code (accepted_values)" in impact.output
    assert "no version of it was ever published" in impact.output
    protected = impact.output.split("protected:")[1]
    for name in ("gold.shipping_dashboard_feed", "exposure.shipping_dashboard"):
        assert name in protected
    as_json = json.loads(
        CliRunner()
        .invoke(cli, ["impact", SILVER, "--format", "json", "--project", str(root)])
        .output
    )
    (blocked,) = as_json["blocked"]
    failed = blocked["failed_checks"]
    assert [c["name"] for c in failed] == ["iso_country_code"]
    assert failed[0]["details"]["unexpected_values"] == ["UK"]
