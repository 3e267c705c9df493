"""The Spark driver's class-data archive: recorded once by ``medallion jars``, mapped by every
later driver, and never a reason for a run to fail or to print on the console."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyspark
import pytest

from medallion_assets.jvm.class_archive import KEPT, _prune, archive_file, java_options
from medallion_assets.jvm.driver import QUICK_JIT, driver_java_options
from medallion_assets.settings import MedallionSettings


def test_auto_maps_the_archive_beside_the_jars_only_when_it_is_there(tmp_path: Path):
    assert java_options("auto", tmp_path) == ""
    archive_file(tmp_path).write_bytes(b"archive")
    options = java_options("auto", tmp_path).split()
    assert options[0] == f"-XX:SharedArchiveFile={archive_file(tmp_path)}"
    # A JVM that cannot use it (another JDK, other jars) starts without it, silently.
    assert {"-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"} <= set(options)
    assert java_options("off", tmp_path) == ""


def test_each_python_environment_and_jdk_has_an_archive_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The JVM maps an archive only on the classpath and the JVM it was recorded with: a second
    virtualenv (its own pyspark jars) or another JDK sharing the jar folder records its own."""
    monkeypatch.setenv("JAVA_HOME", "/usr/lib/jvm/one")
    one = archive_file(tmp_path)
    monkeypatch.setenv("JAVA_HOME", "/usr/lib/jvm/two")
    assert archive_file(tmp_path) != one and archive_file(tmp_path).parent == tmp_path


def test_recording_keeps_the_newest_archives_of_the_folder(tmp_path: Path):
    made = []
    for i in range(KEPT + 2):
        archive = tmp_path / f"driver-classes-{i:012d}.jsa"
        archive.write_bytes(b"a")
        os.utime(archive, (1_000_000 + i, 1_000_000 + i))
        made.append(archive)
    _prune(tmp_path, made[0])  # just recorded, whatever its time
    assert sorted(tmp_path.glob("*.jsa")) == sorted([made[0], *made[-(KEPT - 1) :]])


def test_an_archive_a_driver_maps_is_kept_when_others_are_recorded(tmp_path: Path):
    """Pruning keeps the archives used last, not those recorded last: a virtualenv whose runs
    map its archive keeps it while other clones record theirs beside it."""
    in_use = archive_file(tmp_path)
    in_use.write_bytes(b"a")
    os.utime(in_use, (1_000, 1_000))  # recorded long ago
    assert java_options("auto", tmp_path).startswith(f"-XX:SharedArchiveFile={in_use}")
    for i in range(KEPT + 1):  # other clones record theirs after this one's driver started
        other = tmp_path / f"driver-classes-{i:012d}.jsa"
        other.write_bytes(b"a")
        os.utime(other, (2_000 + i, 2_000 + i))
        _prune(tmp_path, other)
    assert in_use.is_file()


def test_the_archives_of_deleted_environments_go_first(tmp_path: Path):
    """An archive names the pyspark jars and java it was recorded with: once that virtualenv
    is deleted (a temporary clone's) its archive is removed before any live one, whatever
    their times, and live ones beyond the kept number still go, oldest use first."""
    gone_env, live_env = tmp_path / "gone-venv", tmp_path / "live-venv"
    live_env.mkdir()
    folder = tmp_path / "jars"
    folder.mkdir()

    def recorded(name: str, env: Path, used: int) -> Path:
        archive = folder / f"driver-classes-{name}.jsa"
        archive.write_bytes(b"a")
        archive.with_suffix(".where").write_text(f"{env / 'jars'}\n{sys.executable}\n")
        os.utime(archive, (used, used))
        return archive

    (live_env / "jars").mkdir()
    live = [recorded(f"live{i:08d}", live_env, 1_000 + i) for i in range(KEPT - 1)]
    dead = [recorded(f"gone{i:08d}", gone_env, 5_000 + i) for i in range(2)]  # used later
    unknown = folder / "driver-classes-000000000old.jsa"  # recorded before the owner file
    unknown.write_bytes(b"a")
    os.utime(unknown, (10, 10))
    just = recorded("just00000000", live_env, 9_000)
    _prune(folder, just)
    assert sorted(folder.glob("*.jsa")) == sorted([just, *live])
    assert not any(a.with_suffix(".where").exists() for a in [*dead, unknown])


def test_the_driver_options_carry_the_archive_after_the_jit(tmp_path: Path):
    archive_file(tmp_path).write_bytes(b"archive")
    env = {"MEDALLION_SPARK_JARS": str(tmp_path), "MEDALLION_SPARK_JIT": "quick"}
    options = driver_java_options(MedallionSettings.from_env(env, tmp_path), cores=2)
    assert options == f"{QUICK_JIT} {java_options('auto', tmp_path)}"


_DRIVER = textwrap.dedent(
    """
    import os, sys
    from medallion_assets.jvm.driver import driver_java_options
    from medallion_assets.runtime.spark_session import spark_session
    from medallion_assets.settings import MedallionSettings

    settings = MedallionSettings.from_env(os.environ, sys.argv[1])
    options = driver_java_options(settings) + " -Xlog:class+load=info:file=" + sys.argv[2]
    spark = spark_session(settings, conf={"spark.driver.extraJavaOptions": options})
    print("rows", spark.range(3).count())
    spark.stop()
    """
)


def _driver(tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, str]:
    loaded = tmp_path / "classes.log"
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEDALLION_")}
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(tmp_path), str(loaded)],
        env={**base, "MEDALLION_HOME": str(tmp_path / "state"), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done, loaded.read_text() if loaded.exists() else ""


@pytest.mark.slow
def test_a_driver_maps_the_classes_medallion_jars_recorded(tmp_path: Path):
    jars = MedallionSettings.from_env({}).jars_folder
    assert archive_file(jars).is_file(), "run `medallion jars`: it records the archive"
    # It names its environment, so it is kept while this virtualenv is there.
    owner = archive_file(jars).with_suffix(".where").read_text().splitlines()
    assert owner[0] == str(Path(pyspark.__file__).parent.resolve() / "jars")
    done, loaded = _driver(tmp_path, {})
    assert done.returncode == 0 and "rows 3" in done.stdout, done.stderr[-2000:]
    # Classes of Spark's SQL engine come from the recorded (top) archive, not from the jars.
    shared = [line for line in loaded.splitlines() if "shared objects file (top)" in line]
    assert any("org.apache.spark.sql." in line for line in shared), loaded[-2000:]


@pytest.mark.slow
def test_an_archive_the_jvm_cannot_use_is_passed_over_in_silence(tmp_path: Path):
    broken = tmp_path / "broken.jsa"
    broken.write_bytes(b"not an archive")
    done, loaded = _driver(tmp_path, {"MEDALLION_SPARK_CLASS_ARCHIVE": str(broken)})
    assert done.returncode == 0 and "rows 3" in done.stdout, done.stderr[-2000:]
    assert "shared objects file (top)" not in loaded
    assert done.stderr == "" and done.stdout.strip() == "rows 3"


def test_jars_says_in_one_line_when_the_archive_cannot_be_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from click.testing import CliRunner

    from medallion_assets.cli import cli, jars_cmd
    from medallion_assets.jvm import class_archive
    from medallion_assets.jvm.jars import JarFolder

    def failing(jars: Path, timeout: float = 0) -> float:
        raise class_archive.ArchiveNotRecorded("`medallion run` failed: no space left on device")

    monkeypatch.setattr(jars_cmd, "ensure", lambda folder: (JarFolder(folder, ()), None))
    monkeypatch.setattr(class_archive, "record", failing)
    result = CliRunner().invoke(cli, ["jars"], env={"MEDALLION_SPARK_JARS": str(tmp_path)})
    assert result.exit_code == 0, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("class-data archive not recorded (`medallion run` failed: no space")
    assert "runs work without it" in last and "Traceback" not in result.output
