"""The folder of Spark's JVM packages: what it must hold, fetching it, and the one-line error
when it is incomplete.

The pom beside this module names the packages; ``mvn dependency:copy-dependencies`` resolves
them with their dependencies from Maven Central into a fresh folder, which is renamed into place
only when complete, with a manifest of what it holds. A session then puts exactly the manifest's
jars on Spark's classpath (a local driver's own, ``spark.driver.extraClassPath``; a cluster's
``spark.jars``), so nothing is resolved or downloaded at run time.

Maven rather than ``spark.jars.packages`` (Ivy): Ivy resolves the packages again each time a
driver starts, which needs the network on every run and costs seconds each time, and it cannot
leave out pyspark's own jars (netty, slf4j, httpclient) that the packages pull in at older
versions. Maven resolves once and the pom's plugin settings leave those out.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from medallion_assets.errors import ResourceError
from medallion_assets.jvm import local_fs
from medallion_assets.settings import SPARK_JARS_POM, jars_folder

POM = SPARK_JARS_POM
MANIFEST = "MANIFEST.txt"
FETCH_COMMAND = "medallion jars"
_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


class MissingJars(ResourceError):
    """Spark's JVM packages are not (all) in the folder a session would load them from."""


@dataclass(frozen=True)
class JarFolder:
    """A complete folder of jars: its path and the files on Spark's classpath."""

    path: Path
    jars: tuple[Path, ...]

    @property
    def size_bytes(self) -> int:
        return sum(jar.stat().st_size for jar in self.jars)


def default_folder(home: Path, pom: Path = POM) -> Path:
    """``~/.cache/medallion/spark-jars-<first 12 hex of the pom's sha256>``."""
    return jars_folder(home, pom)


def direct_jars(pom: Path = POM) -> tuple[str, ...]:
    """The file names of the packages the pom names itself (its dependencies bring more).

    >>> [name for name in direct_jars() if name.startswith("iceberg")]
    ['iceberg-spark-runtime-4.1_2.13-1.12.0.jar']
    """
    root = ElementTree.parse(pom).getroot()
    properties = {
        element.tag.split("}", 1)[1]: element.text or ""
        for element in root.findall("m:properties/*", _NS)
    }
    names = []
    for dependency in root.findall("m:dependencies/m:dependency", _NS):
        artifact = dependency.findtext("m:artifactId", "", _NS)
        version = re.sub(
            r"\$\{([^}]+)\}",
            lambda match: properties.get(match.group(1), match.group(0)),
            dependency.findtext("m:version", "", _NS),
        )
        names.append(f"{artifact}-{version}.jar")
    return tuple(names)


def jar_folder(folder: Path, pom: Path = POM) -> JarFolder:
    """The complete folder at ``folder``, or ``MissingJars`` saying what is missing and the
    command that fetches it (one line)."""
    listed = _manifest(folder)
    if listed is None:
        raise MissingJars(
            f"Spark's JVM packages (Iceberg, s3a, JDBC drivers) are not fetched yet: no "
            f"{folder}/{MANIFEST}; run `{FETCH_COMMAND}` once on this machine (needs Maven, "
            "`mvn`), or set MEDALLION_SPARK_JARS to a folder it filled"
        )
    missing = [name for name in (*direct_jars(pom), *listed) if not (folder / name).is_file()]
    if missing:
        shown = ", ".join(dict.fromkeys(missing))
        raise MissingJars(
            f"{len(set(missing))} of Spark's jars are missing from {folder} ({shown}): run "
            f"`{FETCH_COMMAND}` to fetch them again"
        )
    return JarFolder(folder, tuple(folder / name for name in listed))


def fetch(folder: Path, pom: Path = POM, mvn: str = "mvn") -> JarFolder:
    """Resolve the pom's packages from Maven Central into ``folder`` (replacing what is there);
    ``MissingJars`` with Maven's own first error line when it cannot."""
    if shutil.which(mvn) is None:
        raise MissingJars(
            f"`{mvn}` is not on PATH: install Maven (e.g. `apt-get install maven`), then run "
            f"`{FETCH_COMMAND}` again"
        )
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        command = [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies"]
        command.append(f"-DoutputDirectory={staging}")
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise MissingJars(f"Maven could not fetch Spark's jars: {_maven_error(done.stdout)}")
        local_fs.build(staging)  # medallion's own jar beside them, when this machine has javac
        names = sorted(path.name for path in staging.glob("*.jar"))
        _write_manifest(staging, names)
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return jar_folder(folder, pom)


def ensure(folder: Path, pom: Path = POM) -> tuple[JarFolder, float | None]:
    """The folder, fetched first when incomplete; (folder, seconds spent fetching or None). A
    folder fetched before medallion's own jar (``local_fs``) existed gets it added."""
    try:
        found = jar_folder(folder, pom)
    except MissingJars:
        started = time.monotonic()
        fetched = fetch(folder, pom)
        return fetched, time.monotonic() - started
    listed = _manifest(folder) or ()
    if local_fs.JAR not in listed and local_fs.build(folder) is not None:
        _write_manifest(folder, (*listed, local_fs.JAR))
        found = jar_folder(folder, pom)
    return found, None


def _manifest(folder: Path) -> tuple[str, ...] | None:
    try:
        text = (folder / MANIFEST).read_text()
    except OSError:
        return None
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def _write_manifest(folder: Path, names: Sequence[str]) -> None:
    (folder / MANIFEST).write_text("".join(f"{name}\n" for name in names))


def _maven_error(output: str) -> str:
    """Maven's first ``[ERROR]`` line, without its prefix (the rest is advice on -X/-e)."""
    for line in output.splitlines():
        if line.startswith("[ERROR]") and line[7:].strip():
            return line[7:].strip()
    return output.strip().splitlines()[-1] if output.strip() else "no output"
