package sparkgate.authz

import java.lang.reflect.InvocationTargetException

import org.apache.spark.api.java.JavaSparkContext
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.CurrentUserContext
import org.apache.spark.sql.types.StructType

/** What the engine sets on a statement's thread before the statement runs, and takes after,
 *  in one Py4J call each. Set one by one from Python they were fifteen round trips (the
 *  job tag, group, pool, interrupt flag, Spark's current user found through five package
 *  lookups, the clear, the touched tables), each costing CPU on both sides of the socket:
 *  measured as the largest part of what the engine adds to a `SELECT 1` (bench/cpu.py).
 *  Every value set here is a property of the calling JVM thread, which PySpark pins to the
 *  statement's Python thread. */
object StatementThread {
  def begin(jsc: JavaSparkContext, tag: String, description: String, pool: String, user: String): Unit =
    begin(jsc, tag, description, pool, user, 0)

  /** `weight` > 0: the pool is a resource group's, made with that weight if it is new. */
  def begin(
      jsc: JavaSparkContext,
      tag: String,
      description: String,
      pool: String,
      user: String,
      weight: Int): Unit = {
    val sc = jsc.sc
    sc.setInterruptOnCancel(true)
    sc.addJobTag(tag)
    sc.setJobGroup(tag, description, interruptOnCancel = true)
    if (weight > 0) org.apache.spark.sparkgate.Pools.ensure(sc, pool, weight)
    sc.setLocalProperty("spark.scheduler.pool", pool)
    CurrentUserContext.CURRENT_USER.set(user)
    Authz.inStatement.set(java.lang.Boolean.TRUE)
  }

  private val serving = new ThreadLocal[AnyRef]

  /** Serve the rows of `df` (a classic Dataset) as Arrow to this thread's Python, as
   *  PySpark's toArrow does (Dataset.collectAsArrowToPython): "connection\nsecret\nschema
   *  JSON", in one call where PySpark makes ten (the schema, its JSON, the call, and two per
   *  element of the answer's array). `served()` then waits for the end. The method is
   *  Spark's package-private API (public in bytecode), hence reflection; a failure is
   *  Spark's own exception, unwrapped, so PySpark shows it as it would. */
  def serveArrow(df: AnyRef): String = {
    val schema = call(df, "schema").asInstanceOf[StructType].json
    val served = call(df, "collectAsArrowToPython").asInstanceOf[Array[AnyRef]]
    serving.set(served(2))
    s"${served(0)}\n${served(1)}\n$schema"
  }

  /** `serveArrow` of `spark.sql(sqlText)`: a statement's SQL and its result in one call
   *  (two before: the SQL's Dataset came back to Python only to be handed back here). */
  def serveSql(spark: SparkSession, sqlText: String): String = serveArrow(spark.sql(sqlText))

  /** The end of what `serveArrow` served on this thread: Spark's error if the query failed. */
  def served(): Unit = {
    val server = serving.get
    serving.remove()
    if (server != null) call(server, "getResult")
  }

  private def call(target: AnyRef, method: String): AnyRef =
    try target.getClass.getMethod(method).invoke(target)
    catch { case e: InvocationTargetException if e.getCause != null => throw e.getCause }

  /** Clear the statement's job tags; what its plans read and wrote (Authz.takeTouched), a
   *  line, and what its Spark tasks cost (QueryCosts.take: JSON, or null if none ran). */
  def end(jsc: JavaSparkContext, tag: String): String = {
    jsc.sc.clearJobTags()
    Authz.inStatement.set(java.lang.Boolean.FALSE)
    s"${Authz.takeTouched()}\n${QueryCosts.take(jsc.sc, tag)}"
  }

  /** `end`, and a third line: the context of `session` after the statement (Reuse.context;
   *  empty when the session turned reuse off), which the statement may have changed. */
  def end(jsc: JavaSparkContext, tag: String, session: SparkSession): String =
    s"${end(jsc, tag)}\n${Reuse.context(session)}"
}
