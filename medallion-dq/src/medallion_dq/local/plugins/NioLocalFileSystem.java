package dq;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FsServerDefaults;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.local.LocalConfigKeys;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system, with permissions set and symbolic links checked through java.nio.
 *
 * Without Hadoop's native library (pyspark ships none), RawLocalFileSystem starts a process for
 * each: a `chmod` for every file and folder it creates, a `readlink` for both sides of every
 * rename (Delta's log commits, through FileContext). A warm sample update of the validation and
 * publish pipelines started about 300 of them. Everything else is Hadoop's own code; a mode
 * with more than the nine permission bits, a path java.nio cannot read, or a file system
 * without POSIX permissions goes to Hadoop's.
 *
 * Enable with spark.hadoop.fs.file.impl=dq.NioLocalFileSystem (FileSystem) and
 * spark.hadoop.fs.AbstractFileSystem.file.impl=dq.NioLocalFileSystem$Fs (FileContext), the jar
 * on the JVM's class path (spark.driver.extraClassPath): Hadoop loads it before --jars are.
 */
public class NioLocalFileSystem extends LocalFileSystem {
  public NioLocalFileSystem() {
    super(new Raw());
  }

  /** RawLocalFileSystem without the two shell commands. */
  public static class Raw extends RawLocalFileSystem {
    // Bit i of a mode (0 = others' execute ... 8 = owner's read).
    private static final PosixFilePermission[] BITS = {
      PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
      PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
      PosixFilePermission.OWNER_READ,
    };

    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      short mode = permission.toShort();
      if ((mode & ~0777) != 0) { // the sticky bit: java.nio cannot set it
        super.setPermission(p, permission);
        return;
      }
      Set<PosixFilePermission> bits = EnumSet.noneOf(PosixFilePermission.class);
      for (int i = 0; i < BITS.length; i++) {
        if ((mode & (1 << i)) != 0) {
          bits.add(BITS[i]);
        }
      }
      try {
        Files.setPosixFilePermissions(pathToFile(p).toPath(), bits); // follows links, as chmod
      } catch (UnsupportedOperationException e) { // not a POSIX file system (Windows)
        super.setPermission(p, permission);
      }
    }

    /**
     * Hadoop asks `readlink` about new File(f.toString()) and, when it names no link, returns
     * getFileStatus(f); the same question asked of java.nio, Hadoop's answer for a link.
     */
    @Override
    public FileStatus getFileLinkStatus(Path f) throws IOException {
      boolean link;
      try {
        link = Files.isSymbolicLink(new File(f.toString()).toPath());
      } catch (InvalidPathException e) {
        link = true;
      }
      return link ? super.getFileLinkStatus(f) : getFileStatus(f);
    }
  }

  /** For FileContext, as Hadoop's LocalFs: checksums over the raw file system. */
  public static class Fs extends ChecksumFs {
    public Fs(URI uri, Configuration conf) throws IOException, URISyntaxException {
      super(new RawFs(uri, conf));
    }
  }

  /** As Hadoop's RawLocalFs (whose constructor is not public), over {@link Raw}. */
  public static class RawFs extends DelegateToFileSystem {
    public RawFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
      super(uri, new Raw(), conf, "file", false);
    }

    @Override
    public int getUriDefaultPort() {
      return -1;
    }

    @Override
    public FsServerDefaults getServerDefaults(Path f) throws IOException {
      return LocalConfigKeys.getServerDefaults();
    }

    @Override
    @SuppressWarnings("deprecation")
    public FsServerDefaults getServerDefaults() throws IOException {
      return LocalConfigKeys.getServerDefaults();
    }

    @Override
    public boolean isValidName(String src) {
      return true; // local paths may hold ':'
    }
  }
}
