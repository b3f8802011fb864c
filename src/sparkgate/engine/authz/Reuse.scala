package sparkgate.authz

import java.nio.charset.StandardCharsets
import java.security.MessageDigest

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.ObjectMapper

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.analysis.{ResolvedInlineTable, SQLFunctionExpression, SQLScalarFunction}
import org.apache.spark.sql.catalyst.catalog.HiveTableRelation
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.V2Aggregator
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.connector.catalog.TableCatalog
import org.apache.spark.sql.execution.datasources.{HadoopFsRelation, LogicalRelation}
import org.apache.spark.sql.execution.datasources.v2.{DataSourceV2Relation, FileTable}

/** What result reuse needs from Spark's analysed plans: whether a statement's
 *  result may be served again (`note`, per checked plan, into its Touched), and the session
 *  context a result is kept under (`context`). Only the plan can say the former: the SQL
 *  text names a table, a temporary view or a function alike. */
object Reuse {
  /** The user's own off switch (Databricks SQL's name): `SET use_cached_result = false`. Not a
   *  `sparkgate.*` key, so the checks let any user set it. */
  val OffKey = "use_cached_result"

  /** On a literal that stands for who runs the plan (current_user(), is_member(): NameUser,
   *  ApplyRules put the answer in the plan before the check sees it): the same text answers
   *  otherwise for another user, even one under the same rules. */
  val PerUser: TreeNodeTag[Unit] = TreeNodeTag[Unit]("sparkgate.perUser")

  def perUser(literal: Literal): Literal = { literal.setTagValue(PerUser, ()); literal }

  /** A plan checked for a statement: counted, and the statement's result made not reusable
   *  unless the plan is a pure read of catalog tables and views; each table's location
   *  noted. A record only: whatever goes wrong in it makes the result not reusable. */
  def note(session: SparkSession, plan: LogicalPlan, touched: Touched): Unit = {
    touched.plans += 1
    val pure = try new Walk(session, touched).pure(plan) catch { case NonFatal(_) => false }
    if (!pure) touched.impure = true
  }

  // Plan nodes a pure read may hold beside its relations: relational operators whose answer
  // depends on their input only. Anything else (commands, writes, typed Dataset operators
  // running user code, Python and R operators, samples with a random seed, streams, RDDs,
  // cursors, scripts) makes it not reusable, whatever Spark adds later.
  private val Operators: Set[Class[_]] = Set(
    classOf[Project], classOf[Filter], classOf[Join], classOf[LateralJoin], classOf[AsOfJoin],
    classOf[Aggregate], classOf[Window], classOf[WindowGroupLimit], classOf[Expand],
    classOf[Generate], classOf[Sort], classOf[GlobalLimit], classOf[LocalLimit],
    classOf[Offset], classOf[Tail], classOf[Union], classOf[Intersect], classOf[Except],
    classOf[Distinct], classOf[Deduplicate], classOf[SubqueryAlias], classOf[WithCTE],
    classOf[CTERelationDef], classOf[CTERelationRef], classOf[UnionLoop], classOf[UnionLoopRef],
    classOf[OneRowRelation], classOf[LocalRelation], classOf[ResolvedInlineTable],
    classOf[Range], classOf[ResolvedHint], classOf[Repartition],
    classOf[RepartitionByExpression], classOf[RebalancePartitions], classOf[Subquery])

  // Functions whose answer depends on when, where, or as whom it runs, or on chance (most
  // are non-deterministic to Spark too; the time, user and session ones are not). By name
  // as well as by class: a class of another name Spark may add is still caught by its name.
  private val Volatile: Set[String] = Set(
    "current_timestamp", "now", "current_date", "curdate", "current_time", "localtimestamp",
    "current_timezone", "current_user", "user", "session_user", "current_database",
    "current_catalog", "current_schema", "input_file_name", "input_file_block_start",
    "input_file_block_length", "monotonically_increasing_id", "spark_partition_id", "uuid",
    "rand", "randn", "random", "shuffle", "randstr", "uniform", "reflect", "java_method",
    "try_reflect", "is_member", "getdate")

  /** One plan's walk: its nodes, their expressions, subqueries' plans and views' plans. */
  private class Walk(session: SparkSession, touched: Touched) {
    def pure(plan: LogicalPlan): Boolean =
      node(plan) && plan.expressions.forall(expression) && plan.children.forall(pure)

    private def node(plan: LogicalPlan): Boolean = plan match {
      case v: View => !v.isTempView // a global temporary view is one too
      case r: LogicalRelation =>
        // A table of files the catalog names: a file list at its location says when it
        // changed. Files by path, JDBC and other sources: nothing to tell that by.
        (r.catalogTable, r.relation) match {
          case (Some(table), _: HadoopFsRelation) if !r.isStreaming =>
            located(Authz.objOf(session, table).name, table.storage.locationUri.map(_.toString))
          case _ => false
        }
      case r: HiveTableRelation =>
        !r.isStreaming &&
          located(Authz.objOf(session, r.tableMeta).name, r.tableMeta.storage.locationUri.map(_.toString))
      case r: DataSourceV2Relation =>
        // Only the session catalog's: another catalog's tables change where we cannot look.
        (r.table, r.catalog.map(_.name()), r.identifier) match {
          case (_: FileTable, _, _) => false
          case (table, Some(Authz.SessionCatalog), Some(id)) if !r.isStreaming =>
            val ns = id.namespace()
            located(Obj(Authz.SessionCatalog, if (ns.isEmpty) "default" else ns.last, id.name()).name,
              Option(table.properties().get(TableCatalog.PROP_LOCATION)))
          case _ => false
        }
      case other => Operators.contains(other.getClass)
    }

    private def located(name: String, location: Option[String]): Boolean = location match {
      case Some(uri) => touched.locations.update(name, uri); true
      case None => false
    }

    private def expression(e: Expression): Boolean = e match {
      case s: SubqueryExpression => s.children.forall(expression) && pure(s.plan)
      case r: RuntimeReplaceable =>
        // What runs is its replacement, which need not be among its children.
        stable(r) && r.children.forall(expression) && expression(r.replacement)
      case other => stable(other) && other.children.forall(expression)
    }

    private def stable(e: Expression): Boolean = e match {
      case l: Literal => l.getTagValue(PerUser).isEmpty
      case _: CurrentTimestampLike | _: CurrentDate | _: CurrentTime | _: CurrentTimeZone |
           _: LocalTimestamp | _: CurrentUser | _: CurrentDatabase | _: CurrentCatalog |
           _: VariableReference | _: IsMember | _: ExpressionWithRandomSeed | _: Nondeterministic |
           _: UserDefinedExpression | _: ApplyFunctionExpression | _: V2Aggregator[_, _] |
           _: SQLFunctionExpression | _: SQLScalarFunction => false
      case _ => e.deterministic && !userCode(e) && !Volatile.contains(e.prettyName.toLowerCase)
    }

    /** Code of a user's (UDFs, UDAFs, UDTFs and aggregators of every kind), by its class's
     *  name where Spark gives it no common type. */
    private def userCode(e: Expression): Boolean = {
      val name = e.getClass.getSimpleName
      Seq("UDF", "UDAF", "UDTF", "Python", "Pandas", "TypedAggregate").exists(name.contains) ||
        name.startsWith("Hive") || name.startsWith("ScalaAggregator")
    }
  }

  // spark.sql.* settings that do not change a result but differ between sessions that should
  // share one: the engine's root session (a dedicated engine's one session) turns artifact
  // isolation off where newSession()s (a shared engine's sessions) have it on. Two engines
  // started with the same conf on one machine differ in no spark.sql.* setting (compared in
  // local mode, with the in-memory and the Hive catalog, classic and Spark Connect sessions;
  // only spark.app.id, spark.app.startTime, spark.app.submitTime and spark.driver.port did).
  private val Ignored = Seq("spark.sql.artifact.")

  private val json = new ObjectMapper()

  /** The context a result of `session` is kept under: a SHA-256 (hex) of what, besides the
   *  statement's text and the user's rules, decides what it means — the current catalog and
   *  namespace, the spark.sql.* settings, the effective time zone and Spark's version (an
   *  unset time zone is the JVM's, which another machine may differ in), and the names of
   *  the session's temporary views and functions (which a name in the text may mean instead
   *  of a table or function of the catalog). "" when the session turned reuse off, or when
   *  the context cannot be told (nothing is then reused in it). */
  def context(session: SparkSession): String =
    try contextOf(session) catch { case NonFatal(_) => "" }

  private def contextOf(session: SparkSession): String = {
    val settings = session.conf.getAll
    if (settings.exists { case (k, v) => k.equalsIgnoreCase(OffKey) && v.trim.equalsIgnoreCase("false") })
      return ""
    val state = session.sessionState
    val manager = state.catalogManager
    val catalog = state.catalog
    val parts = new java.util.ArrayList[AnyRef]()
    parts.add(manager.currentCatalog.name())
    parts.add(manager.currentNamespace.toSeq.asJava)
    parts.add(state.conf.sessionLocalTimeZone)
    parts.add(session.version)
    val sql = new java.util.ArrayList[String]()
    settings.toSeq
      .filter { case (k, _) => k.startsWith("spark.sql.") && !Ignored.exists(k.startsWith) }
      .sorted
      .foreach { case (k, v) => sql.add(k); sql.add(v) }
    parts.add(sql)
    parts.add(catalog.getTempViewNames().sorted.asJava)
    parts.add(catalog.listTemporaryFunctions().map(_.unquotedString).sorted.asJava)
    val digest = MessageDigest.getInstance("SHA-256")
      .digest(json.writeValueAsString(parts).getBytes(StandardCharsets.UTF_8))
    // Once per statement (StatementThread.end): not String.format per byte, ten times slower.
    val hex = new java.lang.StringBuilder(digest.length * 2)
    digest.foreach(b => hex.append(Hex((b >> 4) & 0xf)).append(Hex(b & 0xf)))
    hex.toString
  }

  private val Hex = "0123456789abcdef".toCharArray
}
