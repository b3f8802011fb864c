// sparkgate's data access control inside an engine: a Spark SQL extension
// (spark.sql.extensions=sparkgate.authz.Extensions) that sees every plan of every session of
// the engine, classic and Spark Connect alike, and asks sparkgate's policy (a Decider, written
// in Python, reached through py4j) who may read and change which table.
//
// Compiled when sparkgate is installed, with pyspark's own Scala compiler and against
// pyspark's own jars (sparkgate.engine.authz_build): nothing is downloaded.
package sparkgate.authz

import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._
import scala.util.matching.Regex

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

import org.apache.spark.sql.{AnalysisException, Row, SaveMode, SparkSession, SparkSessionExtensions}
import org.apache.spark.SparkThrowable
import org.apache.spark.sql.catalyst.{FunctionIdentifier, TableIdentifier}
import org.apache.spark.sql.catalyst.analysis.{PersistedView, ResolvedIdentifier, ResolvedNamespace, ResolvedPersistentView, ResolvedTable, UnresolvedRelation}
import org.apache.spark.sql.catalyst.catalog.{CatalogTable, CatalogTableType, HiveTableRelation}
import org.apache.spark.sql.catalyst.expressions.{Alias, And, Attribute, AttributeReference, CurrentUser, Expression, ExpressionInfo, In, Literal, Not, Or, SubqueryExpression, Unevaluable}
import org.apache.spark.sql.catalyst.parser.{ParameterContext, ParserInterface, SqlStatementSplitResult}
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.streaming.{StreamingRelationV2, WriteToStream}
import org.apache.spark.sql.execution.command._
import org.apache.spark.sql.execution.datasources.{CreateTable, CreateTempViewUsing, HadoopFsRelation, InsertIntoHadoopFsRelationCommand, LogicalRelation, SaveIntoDataSourceCommand}
import org.apache.spark.sql.execution.datasources.v2.{DataSourceV2Relation, FileTable}
import org.apache.spark.sql.execution.streaming.runtime.StreamingRelation
import org.apache.spark.sql.hive.execution.{CreateHiveTableAsSelectCommand, InsertIntoHiveDirCommand, InsertIntoHiveTable}
import org.apache.spark.sql.types.{DataType, StringType, StructType}

/** sparkgate's policy, implemented in Python (sparkgate.engine.authz.Decider). */
trait Decider {
  /** Whether table rules are in force (the access file has a `tables:` section). */
  def active(): Boolean

  /** What `user` may do with a table or view: JSON
   *  {"privileges": [...], "hidden": [...], "masks": {col: sql}, "filter": sql|null};
   *  no privileges at all when nothing grants any. */
  def decide(user: String, catalog: String, schema: String, table: String): String

  /** Whether `user` may create, alter and drop objects in `schema`. */
  def ownsSchema(user: String, catalog: String, schema: String): Boolean

  /** Whether `user` has the `code` right (reads and writes by path). */
  def hasCode(user: String): Boolean

  def isMember(user: String, group: String): Boolean

  /** The owner of a persistent view, or null when sparkgate did not record one. */
  def ownerOf(catalog: String, schema: String, table: String): String

  /** `user` created, dropped (`to` null) or renamed a table or view. */
  def changed(user: String, action: String, catalog: String, schema: String, table: String,
              toSchema: String, toTable: String): Unit

  /** GRANT or REVOKE; an error message, or null when done. */
  def grant(user: String, revoke: Boolean, privileges: String, catalog: String, schema: String,
            table: String, granteeKind: String, grantee: String): String

  /** SHOW GRANTS: JSON rows [[kind, grantee, privilege, granted_by, granted_at], ...]. */
  def grants(user: String, catalog: String, schema: String, table: String): String

  /** A refusal, for the audit log. */
  def denied(user: String, privilege: String, obj: String): Unit
}

/** Refused by sparkgate's policy: Spark's error shape (condition INSUFFICIENT_PRIVILEGE,
 *  SQLSTATE 42501). Not an AnalysisException: Spark would wrap one in an error that prints the
 *  analyzed plan, with the denied table's columns, to the refused user. */
class InsufficientPrivilege(val privilege: String, val obj: String, val user: String)
    extends RuntimeException(s"[INSUFFICIENT_PRIVILEGE] $user lacks $privilege on $obj. SQLSTATE: 42501")
    with SparkThrowable {
  override def getCondition: String = "INSUFFICIENT_PRIVILEGE"
  override def getSqlState: String = "42501"
  override def getMessageParameters: java.util.Map[String, String] =
    Map("privilege" -> privilege, "object" -> obj, "user" -> user).asJava
}

/** A table or view's full name; `version` tells this table from another of the same name made
 *  before or after it ("" when unknown: decisions about it are then never kept). */
case class Obj(catalog: String, schema: String, table: String, version: String = "") {
  def name: String = s"$catalog.$schema.$table"
  def schemaName: String = s"schema $catalog.$schema"
}

case class Decision(privileges: Set[String], hidden: Set[String], masks: Map[String, String],
                    filter: Option[String]) {
  def rewrites: Boolean = hidden.nonEmpty || masks.nonEmpty || filter.isDefined
}

object Authz {
  val UserKey = "sparkgate.user"
  /** The file a load (`sparkgate load`) reads, set by the engine on the load's own session:
   *  sparkgate put it there, so reading it is not a read by path of the user's choosing. */
  val UploadKey = "sparkgate.upload"
  /** The engine's own work (its root session): not a user, never checked. */
  val SystemUser = "@system"
  val SessionCatalog = "spark_catalog"
  private val TtlNanos = 1000L * 1000 * 1000
  /** Hive's metastore keeps a table's creation time in whole seconds, on the clock of whoever
   *  made it: a table made less than this before now may be one a kept decision never saw. */
  private val SettledMillis = 2000L

  @volatile private var decider: Decider = _
  @volatile private var activeUntil = 0L
  @volatile private var activeValue = false
  private val decisions = new ConcurrentHashMap[(String, Obj), (Long, Decision)]()
  private val json = new ObjectMapper()

  def install(d: Decider): Unit = { decider = d; invalidate() }

  /** Forget what was decided: the rules or the grants changed. */
  def invalidate(): Unit = { decisions.clear(); activeUntil = 0L }

  private val touchedHere = new ThreadLocal[Touched] { override def initialValue(): Touched = new Touched }

  /** What the statements checked on this thread read and wrote since it was last taken. */
  def noteTouched(touched: Touched): Unit = touchedHere.get.add(touched)

  /** JSON {"read": [...], "written": [...]}, and forget it (the engine asks after each
   *  statement, on the statement's thread). */
  def takeTouched(): String = {
    val found = touchedHere.get
    touchedHere.set(new Touched)
    found.toJson
  }

  private val ConnectJobTag: Regex = "SparkConnect_OperationTag_.*".r
  // What Spark Connect operations' plans read and wrote, by the operation's job tag, until
  // the operation ends (QueryCosts takes it with the operation's cost). Bounded, as costs.
  private val touchedByOperation = new ConcurrentHashMap[String, Touched]()
  private val MaxOperations = 10000

  /** The Spark Connect operation whose thread this is (its job tag), if it is one's. */
  def connectOperation(session: SparkSession): Option[String] =
    session.sparkContext.getJobTags().find(t => ConnectJobTag.pattern.matcher(t).matches())

  /** Note what a check found: for the Connect operation running on this thread, else for
   *  the statement on this thread. Any other thread's (a Connect schema request's, a
   *  stream's restart) nobody would take: not kept. */
  def noteTouched(session: SparkSession, touched: Touched): Unit =
    connectOperation(session) match {
      case Some(tag) =>
        if (touchedByOperation.size < MaxOperations || touchedByOperation.containsKey(tag))
          touchedByOperation.computeIfAbsent(tag, _ => new Touched).add(touched)
      case None => if (inStatement.get) noteTouched(touched)
    }

  /** What a Connect operation's plans touched (JSON, as takeTouched), forgotten here; null
   *  when nothing was checked for it. */
  def takeOperationTouched(tag: String): String = {
    val found = touchedByOperation.remove(tag)
    if (found == null || found.isEmpty) null else found.toJson
  }

  /** A refusal, for the audit: a statement's or a Connect operation's refusal of a table
   *  is in its access history (its query, its door), with what its check had found before
   *  (`touched`); any other (of a path, a setting, a schema; a Connect schema request) is
   *  audited alone. */
  def refused(session: SparkSession, e: InsufficientPrivilege, touched: Touched): Unit =
    if (Touched.isTableUse(e.privilege, e.obj) && (inStatement.get || connectOperation(session).isDefined)) {
      touched.used(e.obj, e.privilege, allowed = false)
      noteTouched(session, touched)
    } else try policy.denied(e.user, e.privilege, e.obj) catch { case _: Throwable => }

  /** Whether a statement of the engine's runs on this thread (StatementThread.begin): its
   *  refusals are recorded with it, as the statement's. */
  private[authz] val inStatement = new ThreadLocal[java.lang.Boolean] {
    override def initialValue(): java.lang.Boolean = java.lang.Boolean.FALSE
  }

  /** Ask again whether rules are in force, keeping the answers about tables. */
  def recheckActive(): Unit = activeUntil = 0L

  def policy: Decider = decider

  def active: Boolean = {
    val d = decider
    if (d == null) return false
    val now = System.nanoTime()
    if (now > activeUntil) { activeValue = d.active(); activeUntil = now + TtlNanos }
    activeValue
  }

  /** What `user` may do with `obj`. Kept a second (a GRANT or REVOKE made in another engine is
   *  seen within it), and only for the very table it was made about: a table dropped and made
   *  again, here or in another engine, is a new version and asked about afresh. */
  def decision(user: String, obj: Obj): Decision = {
    val now = System.nanoTime()
    val key = (user, obj)
    val cached = if (obj.version.isEmpty) null else decisions.get(key)
    if (cached != null && cached._1 > now) return cached._2
    val node = json.readTree(decider.decide(user, obj.catalog, obj.schema, obj.table))
    def strings(n: JsonNode): Set[String] =
      if (n == null) Set.empty else n.elements().asScala.map(_.asText()).toSet
    val masks = Option(node.get("masks")).map(_.fields().asScala.map(e => e.getKey -> e.getValue.asText()).toMap).getOrElse(Map.empty)
    val filter = Option(node.get("filter")).filterNot(_.isNull).map(_.asText())
    val made = Decision(strings(node.get("privileges")), strings(node.get("hidden")), masks, filter)
    if (obj.version.nonEmpty) decisions.put(key, (now + TtlNanos, made))
    made
  }

  private val ConnectTag: Regex = "SparkConnect_OperationTag_User_(.*)_Session_[0-9a-f-]{36}_Operation_.*".r

  /** The sparkgate user of a Spark session: the engine sets it for the sessions it opens
   *  (and clones carry it, streams' and caches' included); a Spark Connect session's is the
   *  user sparkgate's Connect door named, which the session is then bound to. None: nobody
   *  sparkgate knows (a session user code made), which may do nothing. */
  def userOf(session: SparkSession): Option[String] = {
    val bound = session.conf.getOption(UserKey).filter(_.nonEmpty)
    if (bound.isDefined) return bound
    connectUser(session).map { user => session.conf.set(UserKey, user); user }
  }

  private def connectUser(session: SparkSession): Option[String] = {
    // Only where Spark's Connect service runs: asking for its session manager would make one.
    if (!session.sparkContext.getConf.get("spark.plugins", "").contains("SparkConnectPlugin")) return None
    try org.apache.spark.sql.connect.service.SparkgateConnectUsers.userOf(session)
    catch { case _: Throwable => None }
  }

  def qualify(session: SparkSession, id: TableIdentifier): Obj =
    Obj(id.catalog.getOrElse(SessionCatalog),
      id.database.getOrElse(session.sessionState.catalog.getCurrentDatabase), id.table)

  /** The table's name and version. Its creation time tells a table from one of its name made
   *  earlier or later (they are at least a second apart once the table has settled); its
   *  columns, kind and format tell it from another table renamed to its name. */
  def objOf(session: SparkSession, table: CatalogTable): Obj = {
    val named = qualify(session, table.identifier)
    if (table.createTime + SettledMillis >= System.currentTimeMillis()) named
    else named.copy(version =
      s"${table.createTime}|${table.tableType.name}|${table.provider.getOrElse("")}|${table.schema.catalogString}")
  }
}

/** What a statement read and wrote, as its check found it: the tables (`read`, `written`)
 *  and, for the access history, each use of a privilege on an object, allowed or refused,
 *  with the columns read and the masks and filter applied (`Access`). */
class Touched {
  val read = scala.collection.mutable.LinkedHashSet[String]()
  val written = scala.collection.mutable.LinkedHashSet[String]()
  /** (object, privilege) -> allowed; a refusal is kept over an allowance. */
  val uses = scala.collection.mutable.LinkedHashMap[(String, String), Boolean]()
  val columns = scala.collection.mutable.LinkedHashMap[String, Set[String]]()
  val masked = scala.collection.mutable.LinkedHashMap[String, Set[String]]()
  val filtered = scala.collection.mutable.LinkedHashSet[String]()
  /** For result reuse (Reuse.note): how many plans were checked, whether any was not a pure
   *  read, where each table read keeps its files, and whose decision each read used. */
  var plans = 0
  var impure = false
  val locations = scala.collection.mutable.LinkedHashMap[String, String]()
  val readers = scala.collection.mutable.LinkedHashMap[String, scala.collection.mutable.LinkedHashSet[String]]()

  def reader(obj: String, user: String): Unit =
    readers.getOrElseUpdate(obj, scala.collection.mutable.LinkedHashSet[String]()) += user

  def used(obj: String, privilege: String, allowed: Boolean): Unit =
    uses.update((obj, privilege), allowed && uses.getOrElse((obj, privilege), true))

  def add(other: Touched): Unit = {
    read ++= other.read; written ++= other.written
    other.uses.foreach { case ((o, p), ok) => used(o, p, ok) }
    other.columns.foreach { case (o, c) => columns.update(o, columns.getOrElse(o, Set.empty) ++ c) }
    other.masked.foreach { case (o, c) => masked.update(o, masked.getOrElse(o, Set.empty) ++ c) }
    filtered ++= other.filtered
    plans += other.plans
    impure ||= other.impure
    locations ++= other.locations
    other.readers.foreach { case (o, users) => users.foreach(reader(o, _)) }
  }

  def isEmpty: Boolean = read.isEmpty && written.isEmpty && uses.isEmpty

  /** {"read": [...], "written": [...], "access": [{"object", "privilege", "allowed",
   *  "columns"?, "masked"?, "filtered"?}, ...], "reusable": bool, "locations": {table: uri},
   *  "readers": {object: [user, ...]}}; reusable: plans were checked, all pure reads. */
  def toJson: String = {
    val access = uses.toSeq.map { case ((obj, privilege), allowed) =>
      val one = new java.util.LinkedHashMap[String, AnyRef]()
      one.put("object", obj)
      one.put("privilege", privilege)
      one.put("allowed", java.lang.Boolean.valueOf(allowed))
      if (privilege == "SELECT") {
        val read = columns.get(obj)
        read.foreach(c => one.put("columns", c.toSeq.sorted.toArray))
        // The masks of the columns it read (all of the relation's when the plan said none).
        masked.get(obj).map(m => read.map(m & _).getOrElse(m)).filter(_.nonEmpty)
          .foreach(c => one.put("masked", c.toSeq.sorted.toArray))
        if (filtered.contains(obj)) one.put("filtered", java.lang.Boolean.TRUE)
      }
      one
    }
    Touched.json.writeValueAsString(Map[String, AnyRef](
      "read" -> read.toArray, "written" -> written.toArray, "access" -> access.toArray,
      "reusable" -> java.lang.Boolean.valueOf(plans > 0 && !impure),
      "locations" -> locations.asJava,
      "readers" -> readers.map { case (o, users) => o -> users.toArray }.asJava).asJava)
  }
}

object Touched {
  private val json = new ObjectMapper()

  private val TablePrivileges =
    Set("SELECT", "INSERT", "DELETE", "UPDATE", "OWNERSHIP", "CREATE", "EXPLAIN")

  /** Whether a refusal is of a table or view (catalog.schema.table), not of a path, a
   *  setting or a schema: the access history keeps the former. */
  def isTableUse(privilege: String, obj: String): Boolean =
    TablePrivileges.contains(privilege) && !obj.contains(' ') && obj.count(_ == '.') >= 2

  /** The columns each table or view read by `plan` gives to what is above it: the relation's
   *  attributes that a node other than sparkgate's own rewrite refers to (or the plan's
   *  output is), a masked column counting as read when its mask's output is. A row filter's
   *  columns are the rule's, not the user's: not counted. */
  def columnsRead(plan: LogicalPlan, touched: Touched, session: SparkSession): Unit =
    // A record only: whatever goes wrong in it leaves the statement alone.
    try readColumns(plan, touched, session) catch { case scala.util.control.NonFatal(_) => }

  private def readColumns(plan: LogicalPlan, touched: Touched, session: SparkSession): Unit = {
    val nodes = scala.collection.mutable.ArrayBuffer[LogicalPlan]()
    def collect(p: LogicalPlan): Unit = p.foreach { node =>
      nodes += node
      node.expressions.foreach(_.foreach {
        case s: SubqueryExpression => collect(s.plan)
        case _ =>
      })
    }
    collect(plan)
    val referenced = scala.collection.mutable.HashSet[org.apache.spark.sql.catalyst.expressions.ExprId]()
    plan.output.foreach(a => referenced += a.exprId)
    nodes.foreach { node =>
      if (node.getTagValue(RulesTag.Tag).isEmpty) node.references.foreach(a => referenced += a.exprId)
    }
    // A rewrite's output attribute that is referenced reads the column of its name beneath.
    val throughRules = scala.collection.mutable.HashMap[String, Set[String]]()
    nodes.foreach { node =>
      node.getTagValue(RulesTag.Tag).foreach { applied =>
        val names = node.output.filter(a => referenced.contains(a.exprId)).map(_.name.toLowerCase).toSet
        throughRules.update(applied.obj, throughRules.getOrElse(applied.obj, Set.empty) ++ names)
        if (applied.masked.nonEmpty)
          touched.masked.update(applied.obj, touched.masked.getOrElse(applied.obj, Set.empty) ++ applied.masked)
        if (applied.filtered) touched.filtered += applied.obj
      }
    }
    nodes.foreach { node =>
      val found: Option[(String, Seq[Attribute])] = node match {
        case r: LogicalRelation => r.catalogTable.map(t => Authz.objOf(session, t).name -> r.output)
        case r: HiveTableRelation => Some(Authz.objOf(session, r.tableMeta).name -> r.output)
        case r: DataSourceV2Relation => r.identifier.map { id =>
          val ns = id.namespace()
          Obj(r.catalog.map(_.name()).getOrElse(Authz.SessionCatalog),
            if (ns.isEmpty) "default" else ns.last, id.name()).name -> r.output
        }
        case _ => None
      }
      found.foreach { case (obj, output) =>
        val direct = output.filter(a => referenced.contains(a.exprId)).map(_.name.toLowerCase).toSet
        val all = direct ++ throughRules.getOrElse(obj, Set.empty)
        touched.columns.update(obj, touched.columns.getOrElse(obj, Set.empty) ++ all)
      }
    }
  }
}

/** What `ApplyRules` put in place for one relation: its object, masked columns and filter. */
case class Applied(obj: String, masked: Set[String], filtered: Boolean)

object RulesTag {
  val Tag = org.apache.spark.sql.catalyst.trees.TreeNodeTag[Applied]("sparkgate.rules")
}

/** The policy of a walk that only records (no table rules in force): everything is allowed,
 *  nothing is asked or written. */
object AllowAll extends Decider {
  val Everything: Set[String] = Set("SELECT", "INSERT", "DELETE", "UPDATE", "OWNERSHIP")
  override def active(): Boolean = false
  override def decide(user: String, catalog: String, schema: String, table: String): String = ""
  override def ownsSchema(user: String, catalog: String, schema: String): Boolean = true
  override def hasCode(user: String): Boolean = true
  override def isMember(user: String, group: String): Boolean = false
  override def ownerOf(catalog: String, schema: String, table: String): String = null
  override def changed(user: String, action: String, catalog: String, schema: String, table: String,
                       toSchema: String, toTable: String): Unit = ()
  override def grant(user: String, revoke: Boolean, privileges: String, catalog: String,
                     schema: String, table: String, granteeKind: String, grantee: String): String = null
  override def grants(user: String, catalog: String, schema: String, table: String): String = "[]"
  override def denied(user: String, privilege: String, obj: String): Unit = ()
}

class Checker(session: SparkSession, user: String, val touched: Touched = new Touched,
              allowAll: Boolean = false) {
  import Authz._

  // `allowAll`: no rules are in force, and the walk only records what the statement reads and
  // writes (Authz.record), asking no one: no py4j call, no store read.
  private val rules: Decider = if (allowAll) AllowAll else policy

  private def deny(privilege: String, obj: String): Nothing = {
    if (Touched.isTableUse(privilege, obj)) touched.used(obj, privilege, allowed = false)
    throw new InsufficientPrivilege(privilege, obj, user)
  }

  def privileges(obj: Obj): Set[String] =
    if (allowAll) AllowAll.Everything else decision(user, obj).privileges

  def need(privilege: String, obj: Obj): Unit = {
    val have = privileges(obj)
    if (!have.contains(privilege) && !have.contains("OWNERSHIP")) deny(privilege, obj.name)
    if (privilege == "SELECT") { touched.read += obj.name; touched.reader(obj.name, user) }
    else touched.written += obj.name
    touched.used(obj.name, privilege, allowed = true)
  }

  def owns(obj: Obj): Unit = {
    if (!privileges(obj).contains("OWNERSHIP") && !rules.ownsSchema(user, obj.catalog, obj.schema))
      deny("OWNERSHIP", obj.name)
    touched.written += obj.name
    touched.used(obj.name, "OWNERSHIP", allowed = true)
  }

  def ownsSchema(catalog: String, schema: String): Unit =
    if (!rules.ownsSchema(user, catalog, schema)) deny("OWNERSHIP", s"schema $catalog.$schema")

  def code(what: String): Unit = if (!rules.hasCode(user)) deny("CODE", what)

  /** A read of `paths`: the `code` right, unless it is exactly the file of this session's load. */
  private def readsPaths(paths: Seq[String]): Unit = {
    val upload = session.conf.getOption(UploadKey).filter(_.nonEmpty)
    if (!(paths.nonEmpty && upload.exists(u => paths.forall(_ == u))))
      code(s"path ${paths.mkString(", ")}")
  }

  /** DESCRIBE and the like: a table the user has no privilege on is as if absent. */
  def visible(obj: Obj): Unit = {
    if (privileges(obj).isEmpty && !rules.ownsSchema(user, obj.catalog, obj.schema)) {
      throw new AnalysisException("TABLE_OR_VIEW_NOT_FOUND",
        Map("relationName" -> s"`${obj.schema}`.`${obj.table}`",
          "searchPath" -> s"[`${obj.catalog}`, `${obj.schema}`]"))
    }
  }

  private def exists(obj: Obj): Boolean =
    session.sessionState.catalog.tableExists(TableIdentifier(obj.table, Some(obj.schema)))

  /** A table at a location of the user's choosing reads and writes by path. */
  private def external(table: CatalogTable): Unit =
    if (table.tableType == CatalogTableType.EXTERNAL)
      code(s"LOCATION ${table.storage.locationUri.map(_.toString).getOrElse(table.identifier.unquotedString)}")

  /** A create: ownership of the schema; the creator owns what it makes. */
  private def creates(obj: Obj, top: Boolean, replacing: Boolean = false): Unit = {
    lazy val existed = exists(obj) // one catalog call at most: with Hive's, a round trip
    if (replacing && existed) owns(obj) else ownsSchema(obj.catalog, obj.schema)
    touched.written += obj.name
    touched.used(obj.name, "CREATE", allowed = true)
    if (top && !existed) rules.changed(user, "created", obj.catalog, obj.schema, obj.table, null, null)
  }

  /** Every check the plan needs; `top`: the plan is the statement itself (not under EXPLAIN),
   *  so what it creates, drops and renames is recorded. */
  def check(plan: LogicalPlan, top: Boolean): Unit = plan match {
    // -- reads ---------------------------------------------------------------------------
    case v: View if !v.isTempView =>
      val obj = objOf(session, v.desc)
      need("SELECT", obj)
      val owner = Option(rules.ownerOf(obj.catalog, obj.schema, obj.table)).getOrElse(user)
      new Checker(session, owner, touched, allowAll).check(v.child, top = false)
    case s: SubqueryAlias if s.getTagValue(ViewTag.Tag).isDefined =>
      val obj = s.getTagValue(ViewTag.Tag).get
      need("SELECT", obj)
      // SECURITY DEFINER, as Trino's views: what it reads is checked as its owner (as the
      // user reading it when sparkgate did not record one).
      val owner = Option(rules.ownerOf(obj.catalog, obj.schema, obj.table)).getOrElse(user)
      new Checker(session, owner, touched, allowAll).check(s.child, top = false)
    case r: LogicalRelation =>
      r.catalogTable match {
        case Some(t) => need("SELECT", objOf(session, t))
        case None => r.relation match {
          case f: HadoopFsRelation => readsPaths(f.location.rootPaths.map(_.toUri.getPath))
          case _ =>
        }
      }
    case r: HiveTableRelation => need("SELECT", objOf(session, r.tableMeta))
    case r: DataSourceV2Relation =>
      r.table match {
        case f: FileTable => code(s"path ${f.name}")
        case _ => r.identifier.foreach { id =>
          val ns = id.namespace()
          need("SELECT", Obj(r.catalog.map(_.name()).getOrElse(SessionCatalog),
            if (ns.isEmpty) "default" else ns.last, id.name()))
        }
      }
    case s: StreamingRelation =>
      s.dataSource.catalogTable match {
        case Some(t) => need("SELECT", objOf(session, t))
        case None => if (s.dataSource.options.keySet.exists(k => k.equalsIgnoreCase("path")) ||
            s.dataSource.paths.nonEmpty) code(s"stream source ${s.sourceName}")
      }
    case s: StreamingRelationV2 =>
      s.catalog.zip(s.identifier).foreach { case (c, id) =>
        val ns = id.namespace()
        need("SELECT", Obj(c.name(), if (ns.isEmpty) "default" else ns.last, id.name()))
      }
      checkChildren(plan)

    // -- writes --------------------------------------------------------------------------
    case c: InsertIntoHadoopFsRelationCommand =>
      c.catalogTable match {
        case Some(t) =>
          val obj = objOf(session, t)
          need("INSERT", obj)
          if (c.mode == SaveMode.Overwrite) need("DELETE", obj)
        case None => code(s"path ${c.outputPath}")
      }
      check(c.query, top = false)
    case c: InsertIntoHiveTable =>
      val obj = objOf(session, c.table)
      need("INSERT", obj)
      if (c.overwrite) need("DELETE", obj)
      check(c.query, top = false)
    case c: WriteToStream =>
      c.catalogTable match {
        case Some(t) => need("INSERT", objOf(session, t))
        case None => code(s"stream sink ${c.sink.name()}")
      }
      check(c.inputQuery, top = false)
    case c: CreateTable =>
      external(c.tableDesc)
      val obj = objOf(session, c.tableDesc)
      c.mode match {
        case SaveMode.Append if exists(obj) => need("INSERT", obj)
        case SaveMode.Overwrite => creates(obj, top, replacing = true)
        case _ => creates(obj, top)
      }
      c.query.foreach(check(_, top = false))
    case c: Command if c.nodeName == "SaveAsV1TableCommand" =>
      // DataFrameWriter.saveAsTable (a class private to Spark): what its CreateTable needs.
      (c.productElement(0), c.productElement(1), c.productElement(2)) match {
        case (table: CatalogTable, mode: SaveMode, query: LogicalPlan) =>
          check(CreateTable(table, mode, Some(query)), top)
        case _ => deny("a write Spark added", c.nodeName)
      }
    case c: CreateDataSourceTableAsSelectCommand =>
      external(c.table)
      creates(objOf(session, c.table), top, replacing = c.mode == SaveMode.Overwrite)
      check(c.query, top = false)
    case c: CreateHiveTableAsSelectCommand =>
      creates(objOf(session, c.tableDesc), top); check(c.query, top = false)
    case c: CreateDataSourceTableCommand =>
      external(c.table)
      creates(objOf(session, c.table), top)
    case c: CreateTableCommand =>
      external(c.table)
      creates(objOf(session, c.table), top)
    case c: CreateTableLikeCommand =>
      need("SELECT", qualify(session, c.sourceTable))
      if (c.fileFormat.locationUri.isDefined) code(s"LOCATION ${c.fileFormat.locationUri.get}")
      creates(qualify(session, c.targetTable), top)
    case c: CreateViewCommand =>
      c.viewType match {
        case PersistedView => creates(qualify(session, c.name), top, replacing = c.replace)
        case _ =>
      }
      check(c.plan, top = false) // its creator must be able to read what it reads
    case c: AlterViewAsCommand =>
      owns(qualify(session, c.name)); check(c.query, top = false)
    case c: DropTableCommand =>
      val obj = qualify(session, c.tableName)
      if (exists(obj) || !c.ifExists) {
        owns(obj)
        if (top) rules.changed(user, "dropped", obj.catalog, obj.schema, obj.table, null, null)
      }
    case c: AlterTableRenameCommand =>
      val from = qualify(session, c.oldName)
      val to = qualify(session, c.newName)
      owns(from); ownsSchema(to.catalog, to.schema)
      touched.written += to.name
      touched.used(to.name, "CREATE", allowed = true)
      if (top && exists(from) && !exists(to))
        rules.changed(user, "renamed", from.catalog, from.schema, from.table, to.schema, to.table)
    case c: TruncateTableCommand => owns(qualify(session, c.tableName))
    case c: InsertIntoDataSourceDirCommand =>
      code(s"path ${c.storage.locationUri.getOrElse("")}"); check(c.query, top = false)
    case c: InsertIntoHiveDirCommand =>
      code(s"path ${c.storage.locationUri.getOrElse("")}"); check(c.query, top = false)
    case c: SaveIntoDataSourceCommand =>
      code(s"data source ${c.dataSource.getClass.getSimpleName}"); check(c.query, top = false)
    case c: CreateTempViewUsing => code(s"data source ${c.provider}")
    case c: LoadDataCommand => code(s"path ${c.path}"); need("INSERT", qualify(session, c.table))
    case _: AddJarsCommand | _: AddFilesCommand | _: AddArchivesCommand => code("ADD JAR/FILE/ARCHIVE")
    case c: SetCommand =>
      c.kv.foreach { case (key, value) =>
        if (value.isDefined && key.trim.toLowerCase.startsWith("sparkgate.")) deny("SET", key.trim)
      }
    case c: CreateDatabaseCommand =>
      ownsSchema(SessionCatalog, c.databaseName)
      if (c.path.isDefined) code(s"LOCATION ${c.path.get}")
    case c: DropDatabaseCommand => ownsSchema(SessionCatalog, c.databaseName)
    case c: DescribeTableCommand => visible(qualify(session, c.table))
    case c: DescribeColumnCommand => visible(qualify(session, c.table))
    case c: ShowColumnsCommand => visible(qualify(session, c.tableName.copy(database = c.databaseName.orElse(c.tableName.database))))
    case c: ShowCreateTableCommand => visible(qualify(session, c.table))
    case c: ShowTablePropertiesCommand => visible(qualify(session, c.table))
    case c: ShowPartitionsCommand => visible(qualify(session, c.tableName))
    case e: ExplainCommand =>
      check(e.logicalPlan, top = false)
      explains(e.logicalPlan)
    case _: Grant | _: ShowGrants | _: ShowTablesCommand | _: SetCatalogAndNamespace => ()
    case d: DeleteFromTable => v2Target(d.table).foreach { o => need("DELETE", o) }; checkExpressions(plan)
    case u: UpdateTable => v2Target(u.table).foreach { o => need("UPDATE", o) }; checkExpressions(plan)
    case m: MergeIntoTable =>
      v2Target(m.targetTable).foreach { o => need("INSERT", o); need("UPDATE", o); need("DELETE", o) }
      check(m.sourceTable, top = false)
    case w: V2WriteCommand =>
      v2Target(w.table).foreach { o =>
        need("INSERT", o)
        if (!w.isInstanceOf[AppendData]) need("DELETE", o)
      }
      check(w.query, top = false)
    case d: DropTable => dropping(d.child, d.ifExists, top)
    case d: DropView => dropping(d.child, d.ifExists, top)
    case r: RenameTable =>
      targetOf(r.child).foreach { from =>
        val to = r.newName match {
          case Seq(t) => from.copy(table = t)
          case parts => Obj(from.catalog, parts(parts.length - 2), parts.last)
        }
        owns(from); ownsSchema(to.catalog, to.schema)
        touched.written += to.name
        touched.used(to.name, "CREATE", allowed = true)
        if (top && exists(from) && !exists(to))
          rules.changed(user, "renamed", from.catalog, from.schema, from.table, to.schema, to.table)
      }
    case c: Command =>
      // Any other command naming a table: reading its metadata (DESCRIBE, SHOW CREATE
      // TABLE, ...) needs a privilege on it, else it is as if absent; changing it (ALTER
      // TABLE, ANALYZE, REPAIR, ...) is its owner's or its schema owner's to do.
      val named = c.children.flatMap(targetOf) ++ c.productIterator.collect {
        case id: TableIdentifier => qualify(session, id)
      }
      if (ReadOnlyCommands.contains(c.nodeName)) named.foreach(visible) else named.foreach(owns)
      c.children.filter(targetOf(_).isEmpty).foreach(check(_, top = false))
      // What a command holds beside its children (a query it will run, a table it will
      // write): a command Spark adds later is checked as strictly as it can be.
      c.productIterator.foreach {
        case p: LogicalPlan if !c.children.exists(_ eq p) => check(p, top = false)
        case Some(p: LogicalPlan) if !c.children.exists(_ eq p) => check(p, top = false)
        case t: CatalogTable => owns(objOf(session, t))
        case _ =>
      }
      checkExpressions(plan)
    case _ => checkChildren(plan)
  }

  private val ReadOnlyCommands = Set("DescribeRelation", "DescribeColumn", "ShowColumns",
    "ShowCreateTable", "ShowTableProperties", "ShowPartitions", "ShowTableExtended",
    "DescribeTableCommand", "DescribeColumnCommand", "ShowColumnsCommand",
    "ShowCreateTableCommand", "ShowTablePropertiesCommand", "ShowPartitionsCommand",
    "DescribeRelationJsonCommand") // DESCRIBE ... AS JSON (JDBC's GetColumns, the catalog)

  /** An explanation shows the plan as the rules rewrote it: the hidden columns, masks and
   *  filter. Only a user with `code` (who can read around the rules anyway) gets one of a
   *  plan the rules rewrote for them; analysing it here checks its reads too. */
  private def explains(explained: LogicalPlan): Unit = if (!allowAll && !rules.hasCode(user)) {
    val analyzed = session.sessionState.executePlan(explained).analyzed
    analyzed.collectWithSubqueries { case n if n.getTagValue(RulesTag.Tag).isDefined =>
      n.getTagValue(RulesTag.Tag).get.obj
    }.headOption.foreach(obj => deny("EXPLAIN", obj))
  }

  private def targetOf(plan: LogicalPlan): Option[Obj] = {
    def obj(catalog: String, id: org.apache.spark.sql.connector.catalog.Identifier): Obj = {
      val ns = id.namespace()
      Obj(catalog, if (ns.isEmpty) session.sessionState.catalog.getCurrentDatabase else ns.last, id.name())
    }
    plan match {
      case r: ResolvedTable => Some(obj(r.catalog.name(), r.identifier))
      case r: ResolvedIdentifier => Some(obj(r.catalog.name(), r.identifier))
      case r: ResolvedPersistentView => Some(obj(r.catalog.name(), r.identifier))
      case _ => None
    }
  }

  private def dropping(child: LogicalPlan, ifExists: Boolean, top: Boolean): Unit =
    targetOf(child).foreach { obj =>
      if (exists(obj) || !ifExists) {
        owns(obj)
        if (top) rules.changed(user, "dropped", obj.catalog, obj.schema, obj.table, null, null)
      }
    }

  private def v2Target(plan: LogicalPlan): Option[Obj] = plan.collectFirst {
    case r: DataSourceV2Relation if r.identifier.isDefined =>
      val id = r.identifier.get
      val ns = id.namespace()
      Obj(r.catalog.map(_.name()).getOrElse(SessionCatalog), if (ns.isEmpty) "default" else ns.last, id.name())
    case r: LogicalRelation if r.catalogTable.isDefined => objOf(session, r.catalogTable.get)
  }

  private def checkChildren(plan: LogicalPlan): Unit = {
    plan.children.foreach(check(_, top = false))
    checkExpressions(plan)
  }

  private def checkExpressions(plan: LogicalPlan): Unit =
    plan.expressions.foreach(_.foreach {
      case s: SubqueryExpression => check(s.plan, top = false)
      case _ =>
    })
}

/** Marks a relation the analyzer has yet to resolve, so that the relation's masks, hidden
 *  columns and row filter are put in place before `*` is expanded or a column resolved
 *  above it: until then nothing above can resolve. */
case class Guard(child: LogicalPlan) extends UnaryNode {
  override def output: Seq[Attribute] = child.output
  override lazy val resolved: Boolean = false
  override protected def withNewChildInternal(newChild: LogicalPlan): Guard = copy(child = newChild)
}

/** Hints batch (before resolution): every relation a statement names gets a Guard. */
class PlaceGuards(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = {
    if (!Authz.active) return plan
    Authz.userOf(session) match {
      case Some(Authz.SystemUser) | None => plan
      case Some(user) => ByName.check(session, user, plan); wrap(plan)
    }
  }

  private def wrap(plan: LogicalPlan): LogicalPlan = {
    val wrapped = plan match {
      case g: Guard => g
      case u: UnresolvedRelation => Guard(u)
      case i: InsertIntoStatement => i.copy(query = wrap(i.query))
      case w: UnresolvedWith =>
        w.copy(child = wrap(w.child), cteRelations = w.cteRelations.map { case (n, s, d) =>
          (n, wrap(s).asInstanceOf[SubqueryAlias], d)
        })
      case d: DeleteFromTable => d.copy(condition = wrapExpression(d.condition))
      case u: UpdateTable => u
      case m: MergeIntoTable => m.copy(sourceTable = wrap(m.sourceTable))
      case other => other.mapChildren(wrap)
    }
    wrapped match {
      case _: Guard | _: DeleteFromTable => wrapped
      case other => other.transformExpressions {
        case s: SubqueryExpression => s.withNewPlan(wrap(s.plan))
      }
    }
  }

  private def wrapExpression(e: Expression): Expression = e.transform {
    case s: SubqueryExpression => s.withNewPlan(wrap(s.plan))
  }
}

/** Resolution: a Guard whose relation is resolved becomes the relation as the user may see
 *  it: rows filtered, columns masked or hidden. */
class ApplyRules(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = {
    val guarded = plan.transformUpWithSubqueries {
      case Guard(child) if child.resolved => rewrite(child)
    }
    // is_member() in this batch, not after it: until answered, nothing above it resolves
    // (a `*` over a masked column would stay unexpanded).
    guarded.transformAllExpressionsWithSubqueries {
      case IsMember(Literal(group, StringType)) if group != null =>
        val user = Authz.userOf(session).getOrElse("")
        Reuse.perUser(Literal(Authz.active && user.nonEmpty && Authz.policy.isMember(user, group.toString)))
    }
  }

  private def rewrite(child: LogicalPlan): LogicalPlan = {
    val user = Authz.userOf(session).getOrElse(return child)
    val (alias, inner) = child match {
      case s: SubqueryAlias => (Some(s), s.child)
      case other => (None, other)
    }
    val obj = inner match {
      case r: LogicalRelation => r.catalogTable.map(Authz.objOf(session, _))
      case r: HiveTableRelation => Some(Authz.objOf(session, r.tableMeta))
      case v: View if !v.isTempView => Some(Authz.objOf(session, v.desc))
      case _ => None
    }
    val marked = inner match {
      // The analyzer drops View nodes: the alias above says where a view's plan starts.
      case v: View if !v.isTempView => (p: LogicalPlan) => { p.setTagValue(ViewTag.Tag, obj.get); p }
      case _ => (p: LogicalPlan) => p
    }
    obj match {
      case Some(o) =>
        val decision = Authz.decision(user, o)
        if (!decision.rewrites || decision.privileges.isEmpty) return marked(child)
        val parser = session.sessionState.sqlParser
        var rewritten: LogicalPlan = inner
        decision.filter.foreach(f => rewritten = Filter(parser.parseExpression(f), rewritten))
        if (decision.hidden.nonEmpty || decision.masks.nonEmpty) {
          val columns = inner.output.filterNot(a => decision.hidden.exists(_.equalsIgnoreCase(a.name)))
          rewritten = Project(columns.map { a =>
            decision.masks.find(_._1.equalsIgnoreCase(a.name)) match {
              case Some((_, mask)) => Alias(parser.parseExpression(mask), a.name)()
              case None => a
            }
          }, rewritten)
        }
        // Said on the rewrite's nodes: what the access history records of the masks and
        // filter applied, and what it does not count as the user's reads.
        val applied = Applied(o.name,
          decision.masks.keySet.map(_.toLowerCase).filter(m => inner.output.exists(_.name.equalsIgnoreCase(m))),
          decision.filter.isDefined)
        rewritten.foreach(node => if (!(node eq inner)) node.setTagValue(RulesTag.Tag, applied))
        marked(alias.map(a => a.copy(child = rewritten)).getOrElse(SubqueryAlias(o.table, rewritten)))
      case None => child
    }
  }
}

object ViewTag {
  val Tag = org.apache.spark.sql.catalyst.trees.TreeNodeTag[Obj]("sparkgate.view")
}

/** `is_member('group')` in masks and filters: replaced at analysis by the answer. */
case class IsMember(group: Expression) extends Expression with Unevaluable {
  override def children: Seq[Expression] = Seq(group)
  override def dataType: DataType = org.apache.spark.sql.types.BooleanType
  override def nullable: Boolean = false
  override lazy val resolved: Boolean = false
  override protected def withNewChildrenInternal(c: IndexedSeq[Expression]): IsMember = copy(group = c.head)
}

/** After resolution: `current_user()` and `is_member()` answer for the session's user, at
 *  every door (Spark Connect included); SHOW TABLES lists only what the user may use. */
class NameUser(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = {
    val user = Authz.userOf(session) match {
      case Some(u) if u != Authz.SystemUser => u
      case _ => return plan
    }
    val named = plan.transformAllExpressionsWithSubqueries {
      case _: CurrentUser => Reuse.perUser(Literal(user))
    }
    if (!Authz.active) named else named.transformUp {
      case s: ShowTablesCommand if s.getTagValue(ShowTablesFiltered.Tag).isEmpty =>
        s.setTagValue(ShowTablesFiltered.Tag, ())
        ShowTablesFiltered.filter(session, user, s.databaseName, s.tableIdentifierPattern, s)
      case s @ ShowTables(ResolvedNamespace(catalog, ns, _), pattern, _)
          if s.getTagValue(ShowTablesFiltered.Tag).isEmpty && catalog.name() == Authz.SessionCatalog && ns.nonEmpty =>
        s.setTagValue(ShowTablesFiltered.Tag, ())
        ShowTablesFiltered.filter(session, user, Some(ns.last), pattern, s)
      case s @ ShowNamespacesCommand(ResolvedNamespace(catalog, Seq(), _), _, _)
          if s.getTagValue(SchemasFiltered.Tag).isEmpty && catalog.name() == Authz.SessionCatalog =>
        s.setTagValue(SchemasFiltered.Tag, ())
        SchemasFiltered.filter(session, user, s)
    }
  }
}

object ShowTablesFiltered {
  val Tag = org.apache.spark.sql.catalyst.trees.TreeNodeTag[Unit]("sparkgate.filtered")

  def filter(session: SparkSession, user: String, database: Option[String], pattern: Option[String],
             s: LogicalPlan): LogicalPlan = {
    val catalog = session.sessionState.catalog
    val db = database.getOrElse(catalog.getCurrentDatabase)
    val checker = new Checker(session, user)
    val visible = catalog.listTables(db, pattern.getOrElse("*"))
      .filter(_.database.isDefined)
      .filter(id => checker.privileges(Authz.qualify(session, id)).nonEmpty ||
        Authz.policy.ownsSchema(user, Authz.SessionCatalog, id.database.get))
      .map(id => Literal(id.table): Expression)
    val name = s.output(1)
    val temporary = s.output(2)
    Filter(RowByRow(Or(temporary, if (visible.isEmpty) Literal(false) else In(name, visible))), s)
  }
}

/** The statement-level check, after analysis: nothing has run yet. */
object Authorize {
  val ViewResolutionClass = "org.apache.spark.sql.catalyst.analysis.ViewResolution"
}

class Authorize(session: SparkSession) extends (LogicalPlan => Unit) {
  import Authorize._
  override def apply(plan: LogicalPlan): Unit = {
    // A plan analyzed while a statement executes (a CTAS's write, a command's own queries)
    // belongs to a statement that was checked whole before it started.
    if (session.sparkContext.getLocalProperty("spark.sql.execution.id") != null) return
    if (!Authz.active) return record(plan)
    Authz.userOf(session) match {
      case Some(Authz.SystemUser) =>
      case Some(user) =>
        val checker = new Checker(session, user)
        try {
          checker.check(plan, top = true)
          Touched.columnsRead(plan, checker.touched, session)
          Reuse.note(session, plan, checker.touched)
          Authz.noteTouched(session, checker.touched)
        } catch {
          case e: InsufficientPrivilege =>
            // A view's own plan, checked while the view is resolved: the statement reading
            // the view is checked as a whole, with the view as its boundary (its owner's
            // privileges beneath), so a refusal here is not one. Looked for on refusal only.
            if (Thread.currentThread.getStackTrace.exists(_.getClassName.startsWith(ViewResolutionClass))) return
            Authz.refused(session, e, checker.touched)
            throw e
        }
      case None =>
        throw new InsufficientPrivilege("a sparkgate user", "this Spark session", "nobody")
    }
  }

  /** No rules in force: nothing is refused, but what the statement reads and writes is still
   *  recorded (the catalog's recent queries), by the same walk allowing everything. A record
   *  only: whatever goes wrong in it leaves the statement alone. */
  private def record(plan: LogicalPlan): Unit = {
    if (session.conf.getOption(Authz.UserKey).contains(Authz.SystemUser)) return
    val checker = new Checker(session, Authz.SystemUser, allowAll = true)
    try {
      checker.check(plan, top = true)
      Touched.columnsRead(plan, checker.touched, session)
      Reuse.note(session, plan, checker.touched)
      Authz.noteTouched(session, checker.touched)
    } catch {
      case scala.util.control.NonFatal(_) =>
        // A plan this walk could not follow is no pure read to reuse the result of.
        val unknown = new Touched
        unknown.plans = 1
        unknown.impure = true
        Authz.noteTouched(session, unknown)
    }
  }
}

/** GRANT ... ON TABLE t TO USER|GROUP g, REVOKE ... FROM ..., SHOW GRANTS ON TABLE t. */
case class Grant(revoke: Boolean, privileges: Seq[String], table: Seq[String], kind: String,
                 grantee: String) extends LeafRunnableCommand {
  override def run(session: SparkSession): Seq[Row] = {
    val user = Authz.userOf(session).getOrElse(throw new InsufficientPrivilege("GRANT", table.mkString("."), "nobody"))
    val obj = Grants.resolve(session, table)
    if (Authz.policy == null) throw new IllegalStateException("access control is not installed in this engine")
    val error = Authz.policy.grant(user, revoke, privileges.mkString(","), obj.catalog, obj.schema,
      obj.table, kind, grantee)
    if (error != null) {
      if (error.startsWith("INSUFFICIENT_PRIVILEGE:")) throw new InsufficientPrivilege("OWNERSHIP", obj.name, user)
      throw new IllegalArgumentException(error)
    }
    Authz.invalidate()
    Seq.empty
  }
}

case class ShowGrants(table: Seq[String]) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("grantee_type", StringType, nullable = false)(),
    AttributeReference("grantee", StringType, nullable = false)(),
    AttributeReference("privilege", StringType, nullable = false)(),
    AttributeReference("granted_by", StringType, nullable = true)(),
    AttributeReference("granted_at", StringType, nullable = true)())

  override def run(session: SparkSession): Seq[Row] = {
    val user = Authz.userOf(session).getOrElse(throw new InsufficientPrivilege("SHOW GRANTS", table.mkString("."), "nobody"))
    val obj = Grants.resolve(session, table)
    if (Authz.policy == null) return Seq.empty
    val rows = new ObjectMapper().readTree(Authz.policy.grants(user, obj.catalog, obj.schema, obj.table))
    rows.elements().asScala.map { r =>
      Row.fromSeq(r.elements().asScala.map(v => if (v.isNull) null else v.asText()).toSeq)
    }.toSeq
  }
}

object Grants {
  private val Name = """(`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)(\s*\.\s*(`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)){0,2}"""
  private val GrantRe = ("""(?is)\s*(GRANT|REVOKE)\s+((?:SELECT|INSERT|DELETE|UPDATE|ALL)(?:\s*,\s*(?:SELECT|INSERT|DELETE|UPDATE))*)(?:\s+PRIVILEGES)?\s+ON\s+(?:TABLE\s+|VIEW\s+)?(""" + Name + """)\s+(TO|FROM)\s+(USER|GROUP)\s+(`[^`]+`|[^\s;`]+)\s*;?\s*""").r
  private val ShowRe = ("""(?is)\s*SHOW\s+GRANTS\s+ON\s+(?:TABLE\s+|VIEW\s+)?(""" + Name + """)\s*;?\s*""").r

  def parse(sql: String, parser: ParserInterface): Option[LogicalPlan] = sql match {
    case GrantRe(verb, privs, name, _, _, _, preposition, kind, grantee) =>
      val revoke = verb.equalsIgnoreCase("REVOKE")
      if (revoke != preposition.equalsIgnoreCase("FROM"))
        throw new IllegalArgumentException(s"$verb ... ${preposition.toUpperCase}: GRANT takes TO, REVOKE takes FROM")
      val list = privs.split(",").map(_.trim.toUpperCase).toSeq
      val expanded = if (list.contains("ALL")) Seq("SELECT", "INSERT", "DELETE", "UPDATE") else list
      Some(Grant(revoke, expanded.distinct, parser.parseMultipartIdentifier(name), kind.toLowerCase,
        grantee.stripPrefix("`").stripSuffix("`")))
    case ShowRe(name, _, _, _) => Some(ShowGrants(parser.parseMultipartIdentifier(name)))
    case _ => None
  }

  def resolve(session: SparkSession, parts: Seq[String]): Obj = {
    val obj = parts match {
      case Seq(t) => Obj(Authz.SessionCatalog, session.sessionState.catalog.getCurrentDatabase, t)
      case Seq(s, t) => Obj(Authz.SessionCatalog, s, t)
      case Seq(c, s, t) => Obj(c, s, t)
    }
    if (!session.sessionState.catalog.tableExists(TableIdentifier(obj.table, Some(obj.schema))))
      throw new AnalysisException("TABLE_OR_VIEW_NOT_FOUND",
        Map("relationName" -> s"`${obj.schema}`.`${obj.table}`",
          "searchPath" -> s"[`${obj.catalog}`, `${obj.schema}`]"))
    obj
  }
}

/** Spark's parser, with sparkgate's GRANT, REVOKE and SHOW GRANTS in front of it (Spark's
 *  own refuses them for the session catalog). */
class GrantParser(delegate: ParserInterface) extends ParserInterface {
  override def parsePlan(sqlText: String): LogicalPlan =
    Grants.parse(sqlText, delegate).getOrElse(delegate.parsePlan(sqlText))
  override def parsePlanWithParameters(sqlText: String, context: ParameterContext): LogicalPlan =
    Grants.parse(sqlText, delegate).getOrElse(delegate.parsePlanWithParameters(sqlText, context))
  override def parseExpression(sqlText: String): Expression = delegate.parseExpression(sqlText)
  override def parseTableIdentifier(sqlText: String): TableIdentifier = delegate.parseTableIdentifier(sqlText)
  override def parseFunctionIdentifier(sqlText: String): FunctionIdentifier = delegate.parseFunctionIdentifier(sqlText)
  override def parseMultipartIdentifier(sqlText: String): Seq[String] = delegate.parseMultipartIdentifier(sqlText)
  override def parseQuery(sqlText: String): LogicalPlan = delegate.parseQuery(sqlText)
  override def parseRoutineParam(sqlText: String): StructType = delegate.parseRoutineParam(sqlText)
  override def splitStatements(sqlText: String): SqlStatementSplitResult = delegate.splitStatements(sqlText)
  override def parseTableSchema(sqlText: String): StructType = delegate.parseTableSchema(sqlText)
  override def parseDataType(sqlText: String): DataType = delegate.parseDataType(sqlText)
}

class Extensions extends (SparkSessionExtensions => Unit) {
  override def apply(e: SparkSessionExtensions): Unit = {
    e.injectParser((_, delegate) => new GrantParser(delegate))
    e.injectHintResolutionRule(session => new PlaceGuards(session))
    e.injectResolutionRule(session => new ApplyRules(session))
    e.injectPostHocResolutionRule(session => new NameUser(session))
    e.injectCheckRule(session => new Authorize(session))
    e.injectFunction((FunctionIdentifier("is_member"),
      new ExpressionInfo(classOf[IsMember].getName, "is_member"),
      (children: Seq[Expression]) => IsMember(children.head)))
  }
}
