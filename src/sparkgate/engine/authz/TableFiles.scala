// The files of a table, for the catalog (sparkgate.engine.catalog_browse): their total size,
// how many there are and when the newest changed, walked here in the JVM with Hadoop's
// FileSystem, where a walk through py4j would cost a round trip per file. Compiled into the
// access-control extension's jar (sparkgate.engine.authz.build), beside it.
package sparkgate.authz

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

object TableFiles {
  /** JSON {"bytes", "files", "modified" (epoch ms; null: no file), "complete"} of the files
   *  under `location`, read with the session's Hadoop settings; at most `limit` files are
   *  counted (`complete` false: there were more). A missing location has no files. */
  def summary(session: SparkSession, location: String, limit: Int): String = {
    val path = new Path(location)
    val fs = path.getFileSystem(session.sessionState.newHadoopConf())
    var bytes = 0L
    var files = 0L
    var newest = -1L
    var complete = true
    if (fs.exists(path)) {
      val found = fs.listFiles(path, true)
      while (found.hasNext && complete) {
        if (files >= limit) complete = false
        else {
          val file = found.next()
          bytes += file.getLen
          files += 1
          newest = math.max(newest, file.getModificationTime)
        }
      }
    }
    val modified = if (newest < 0) "null" else newest.toString
    s"""{"bytes": $bytes, "files": $files, "modified": $modified, "complete": $complete}"""
  }
}
