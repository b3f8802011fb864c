package sparkgate.authz

import org.apache.spark.api.java.JavaSparkContext
import org.apache.spark.sql.catalyst.CurrentUserContext

/** What the engine sets on a statement's thread before the statement runs, and takes after,
 *  in one Py4J call each. Set one by one from Python they were fifteen round trips (the
 *  job tag, group, pool, interrupt flag, Spark's current user found through five package
 *  lookups, the clear, the touched tables), each costing CPU on both sides of the socket:
 *  measured as the largest part of what the engine adds to a `SELECT 1` (bench/cpu.py).
 *  Every value set here is a property of the calling JVM thread, which PySpark pins to the
 *  statement's Python thread. */
object StatementThread {
  def begin(jsc: JavaSparkContext, tag: String, description: String, pool: String, user: String): Unit = {
    val sc = jsc.sc
    sc.setInterruptOnCancel(true)
    sc.addJobTag(tag)
    sc.setJobGroup(tag, description, interruptOnCancel = true)
    sc.setLocalProperty("spark.scheduler.pool", pool)
    CurrentUserContext.CURRENT_USER.set(user)
  }

  /** Clear the statement's job tags; what its plans read and wrote (Authz.takeTouched). */
  def end(jsc: JavaSparkContext): String = {
    jsc.sc.clearJobTags()
    Authz.takeTouched()
  }
}
