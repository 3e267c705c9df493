"""Spark's JVM packages: fetched once with Maven, checked before a session loads them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from medallion_assets.cli import cli
from medallion_assets.jvm import local_fs
from medallion_assets.jvm.jars import (
    MANIFEST,
    MissingJars,
    default_folder,
    direct_jars,
    fetch,
    jar_folder,
)
from tests.conftest import copy_demo_project


def test_the_pom_names_icebergs_spark_runtime_hadoop_aws_and_both_jdbc_drivers():
    names = direct_jars()
    assert "iceberg-spark-runtime-4.1_2.13-1.12.0.jar" in names
    assert "hadoop-aws-3.4.2.jar" in names
    assert any(name.startswith("sqlite-jdbc-") for name in names)
    assert any(name.startswith("postgresql-") for name in names)


def test_hadoop_aws_equals_pysparks_bundled_hadoop():
    import pyspark

    bundled = sorted(Path(pyspark.__file__).parent.joinpath("jars").glob("hadoop-client-api-*"))
    assert bundled, "pyspark ships hadoop-client-api"
    version = bundled[0].name.removeprefix("hadoop-client-api-").removesuffix(".jar")
    assert f"hadoop-aws-{version}.jar" in direct_jars()


def test_the_default_folder_changes_with_the_pom(tmp_path: Path):
    pom = tmp_path / "pom.xml"
    pom.write_text("<project/>")
    first = default_folder(Path("/home/u"), pom)
    pom.write_text("<project><!-- another version --></project>")
    assert default_folder(Path("/home/u"), pom) != first
    assert first.parent == Path("/home/u/.cache/medallion")


def test_a_folder_never_fetched_names_the_command_that_fetches_it(tmp_path: Path):
    with pytest.raises(MissingJars) as raised:
        jar_folder(tmp_path / "jars")
    message = str(raised.value)
    assert "\n" not in message
    assert "`medallion jars`" in message and "MEDALLION_SPARK_JARS" in message


def test_a_deleted_jar_is_named(tmp_path: Path):
    folder = tmp_path / "jars"
    folder.mkdir()
    names = [*direct_jars(), "s3-2.29.52.jar"]
    for name in names:
        (folder / name).write_bytes(b"PK")
    (folder / MANIFEST).write_text("\n".join(names) + "\n")
    assert len(jar_folder(folder).jars) == len(names)
    (folder / "s3-2.29.52.jar").unlink()
    with pytest.raises(MissingJars, match=r"1 of Spark's jars are missing .*\(s3-2\.29\.52\.jar\)"):
        jar_folder(folder)


def test_without_maven_the_error_says_to_install_it(tmp_path: Path):
    with pytest.raises(MissingJars, match="`no-such-mvn` is not on PATH: install Maven"):
        fetch(tmp_path / "jars", mvn="no-such-mvn")


def test_the_cli_check_fails_in_one_line_without_a_traceback(tmp_path: Path):
    result = CliRunner().invoke(
        cli, ["jars", "--check"], env={"MEDALLION_SPARK_JARS": str(tmp_path / "none")}
    )
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert "run `medallion jars` once on this machine" in result.output


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mvn") is None, reason="needs Maven")
def test_fetch_resolves_the_pom_from_maven_central_leaving_out_pysparks_own_jars(tmp_path: Path):
    """Real Maven: the jars land complete with a manifest, without netty or slf4j (pyspark
    ships newer ones) and without the 640 MB AWS SDK bundle."""
    found = fetch(tmp_path / "jars")
    names = {jar.name for jar in found.jars}
    assert set(direct_jars()) <= names
    assert "netty-nio-client-2.29.52.jar" in names  # the AWS SDK's async client, not netty
    assert not [n for n in names if n.startswith(("netty-common", "slf4j", "bundle-"))]
    assert found.size_bytes < 150e6
    assert [p.name for p in tmp_path.iterdir()] == ["jars"]  # no staging folder left behind
    assert local_fs.JAR in names  # medallion's own, compiled beside them (tests/jvm/test_local_fs)


@pytest.mark.parametrize("command", [["run"], ["build", "silver.orders_usd"]])
def test_a_run_without_the_jars_stops_in_one_line_before_starting(
    tmp_path: Path, command: list[str], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("MEDALLION_SPARK_LOG", str(tmp_path / "spark.log"))  # run sets it
    project = copy_demo_project(tmp_path / "project")
    result = CliRunner().invoke(
        cli,
        [*command, "--project", str(project)],
        env={"MEDALLION_SPARK_JARS": str(tmp_path / "none"), "MEDALLION_HOME": str(tmp_path)},
    )
    assert result.exit_code == 2, result.output
    (problem,) = result.output.splitlines()  # preflight: the one problem and its fix
    assert "run `medallion jars` once on this machine" in problem
    assert "Traceback" not in result.output
    assert not (tmp_path / "dagster").exists()  # nothing was started


def test_the_command_leaves_every_module_of_the_package_compiled_from_its_source():
    # An editable install leaves the package as source; with PYTHONDONTWRITEBYTECODE set (as on
    # this machine) every process compiled it again, seconds per command.
    import importlib.util

    import medallion_assets
    from medallion_assets.cli.jars_cmd import compile_package

    assert compile_package()
    package = Path(medallion_assets.__file__).parent
    for source in package.rglob("*.py"):
        cached = Path(importlib.util.cache_from_source(str(source)))
        header = cached.read_bytes()[:16]
        assert int.from_bytes(header[8:12], "little") == int(source.stat().st_mtime), source
