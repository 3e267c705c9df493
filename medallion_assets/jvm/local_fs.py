"""A local lake's files written without a process per file.

Hadoop's local file system, without Hadoop's native library (pyspark ships none), sets each
file's and folder's permissions by starting ``chmod``: a demo run on a local lake started ~520
processes from the Spark driver's JVM, one for every data file, manifest, metadata file and
their checksums, each on the path of the commit that wrote it. ``ChmodFreeLocalFileSystem.java``
(beside this module) sets them through ``java.nio`` instead; ``medallion jars`` compiles it into
the jar folder, and a local driver whose folder holds it serves ``file:`` with it. A folder
without it (no ``javac`` on the machine) runs as before.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

SOURCE = Path(__file__).with_name("ChmodFreeLocalFileSystem.java")
JAR = "medallion-local-fs.jar"
CLASS = "medallion.hadoop.ChmodFreeLocalFileSystem"


def build(folder: Path, javac: str = "javac") -> str | None:
    """Compile the class into ``folder``/``JAR`` against pyspark's Hadoop; the jar's name, or
    None when it cannot be (no ``javac``, no Hadoop jar, a compile error): runs then work as
    before."""
    hadoop = _hadoop_api()
    if shutil.which(javac) is None or hadoop is None:
        return None
    with tempfile.TemporaryDirectory(prefix="medallion-local-fs-") as work:
        classes = Path(work)
        command = [javac, "--release", "17", "-nowarn", "-cp", str(hadoop), "-d", str(classes)]
        done = subprocess.run([*command, str(SOURCE)], capture_output=True, check=False)
        if done.returncode != 0:
            return None
        partial = folder / f".{JAR}.partial"
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            for path in sorted(classes.rglob("*.class")):
                jar.write(path, path.relative_to(classes).as_posix())
        partial.replace(folder / JAR)
    return JAR


def spark_conf(jars: Sequence[Path]) -> dict[str, str]:
    """The Spark setting that serves ``file:`` with the class, when ``jars`` (a local
    driver's classpath) holds its jar; else nothing.

    >>> spark_conf([Path("/j/iceberg.jar"), Path("/j/medallion-local-fs.jar")])
    {'spark.hadoop.fs.file.impl': 'medallion.hadoop.ChmodFreeLocalFileSystem'}
    >>> spark_conf([Path("/j/iceberg.jar")])
    {}
    """
    if not any(jar.name == JAR for jar in jars):
        return {}
    return {"spark.hadoop.fs.file.impl": CLASS}


def _hadoop_api() -> Path | None:
    """pyspark's ``hadoop-client-api`` jar, which the class is compiled against."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return None
    found = sorted((Path(spec.origin).parent / "jars").glob("hadoop-client-api-*.jar"))
    return found[-1] if found else None
