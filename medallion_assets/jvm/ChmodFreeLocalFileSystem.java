/*
 * Hadoop's local file system (file:), with a file's or folder's permissions set through
 * java.nio instead of a `chmod` process. Without Hadoop's native library (never shipped with
 * pyspark) RawLocalFileSystem.setPermission starts `chmod` for every file and folder it creates:
 * a demo run on a local lake started ~520 of them from the Spark driver's JVM. Compiled by
 * `medallion jars` (medallion_assets/jvm/local_fs.py); everything else is Hadoop's own.
 */
package medallion.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

public class ChmodFreeLocalFileSystem extends LocalFileSystem {
  public ChmodFreeLocalFileSystem() {
    super(new Raw());
  }

  /** RawLocalFileSystem but for setPermission. */
  public static class Raw extends RawLocalFileSystem {
    // The permission bits from the lowest (others' execute) up, as chmod's octal reads them.
    private static final PosixFilePermission[] BITS = {
      PosixFilePermission.OTHERS_EXECUTE,
      PosixFilePermission.OTHERS_WRITE,
      PosixFilePermission.OTHERS_READ,
      PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.GROUP_WRITE,
      PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE,
      PosixFilePermission.OWNER_WRITE,
      PosixFilePermission.OWNER_READ,
    };

    @Override
    public void setPermission(Path path, FsPermission permission) throws IOException {
      int mode = permission.toShort();
      if ((mode & ~0777) != 0) { // a sticky bit: java.nio has no name for it, chmod does
        super.setPermission(path, permission);
        return;
      }
      Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
      for (int bit = 0; bit < BITS.length; bit++) {
        if ((mode & (1 << bit)) != 0) {
          set.add(BITS[bit]);
        }
      }
      try {
        Files.setPosixFilePermissions(pathToFile(path).toPath(), set);
      } catch (UnsupportedOperationException notPosix) { // a file system without POSIX modes
        super.setPermission(path, permission);
      }
    }
  }
}
