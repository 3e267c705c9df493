"""A local driver serves ``file:`` with medallion's class (``jvm/local_fs.py``): a file's and
a folder's permissions are set through java.nio, as Hadoop's ``chmod`` process would set them,
without one process per file."""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path

from medallion_assets.jvm import local_fs
from medallion_assets.jvm.jars import MANIFEST, ensure, jar_folder
from medallion_assets.settings import MedallionSettings


def test_the_class_compiles_against_pysparks_hadoop_into_a_jar(tmp_path: Path):
    assert local_fs.build(tmp_path) == local_fs.JAR
    with zipfile.ZipFile(tmp_path / local_fs.JAR) as jar:
        names = set(jar.namelist())
    assert "medallion/hadoop/ChmodFreeLocalFileSystem.class" in names
    assert "medallion/hadoop/ChmodFreeLocalFileSystem$Raw.class" in names
    assert not list(tmp_path.glob(".*partial"))


def test_without_javac_there_is_no_jar_and_nothing_fails(tmp_path: Path):
    assert local_fs.build(tmp_path, javac="no-such-javac") is None
    assert list(tmp_path.iterdir()) == []


def test_a_folder_fetched_before_the_jar_existed_gets_it_added(tmp_path: Path):
    """``medallion jars`` on an older complete folder adds the jar to it and its manifest."""
    machine = jar_folder(MedallionSettings.from_env(dict(os.environ)).jars_folder)
    folder = tmp_path / "jars"
    folder.mkdir()
    kept = [jar for jar in machine.jars if jar.name != local_fs.JAR]
    for jar in kept:
        os.link(jar, folder / jar.name)
    (folder / MANIFEST).write_text("".join(f"{jar.name}\n" for jar in kept))
    found, fetched = ensure(folder)
    assert fetched is None  # nothing fetched again
    assert found.jars[-1] == folder / local_fs.JAR and len(found.jars) == len(kept) + 1


def test_a_local_driver_creates_files_and_folders_with_hadoops_permissions(spark, tmp_path: Path):
    """The shared session's driver (started by ``spark_session`` on this machine's jars): its
    ``file:`` system is medallion's class, and what it creates, and a mode set later (a sticky
    bit too, which java.nio cannot name: Hadoop's own path then), are what Hadoop sets."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI("file:///"), conf)
    assert fs.getClass().getName() == local_fs.CLASS
    umask = os.umask(0)
    os.umask(umask)
    made = tmp_path / "a" / "b" / "part.parquet"
    stream = fs.create(jvm.org.apache.hadoop.fs.Path(made.as_uri()), True)
    stream.write(b"x")
    stream.close()
    assert stat.S_IMODE(made.stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE(made.parent.stat().st_mode) == 0o777 & ~umask
    assert (made.parent / f".{made.name}.crc").is_file()  # checksums as before
    for mode in (0o640, 0o1777):
        permission = jvm.org.apache.hadoop.fs.permission.FsPermission(mode)
        fs.setPermission(jvm.org.apache.hadoop.fs.Path(made.parent.as_uri()), permission)
        assert stat.S_IMODE(made.parent.stat().st_mode) == mode
