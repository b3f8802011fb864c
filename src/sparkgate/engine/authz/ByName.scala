// What the rules answer before Spark looks a table up: a user with no privilege on a name (and
// not the owner of its schema) is refused for it by name, before resolution, whether a table
// has that name or not, so that none of Spark's analysis errors (UNSUPPORTED_OVERWRITE, a
// column suggestion, a schema mismatch, "already exists", "not found") tells them which is
// the case; reads and writes by path are refused the same way to whoever lacks `code`,
// before Spark looks at the path. And the schemas a user is shown.
package sparkgate.authz

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper

import org.apache.spark.sql.{SaveMode, SparkSession}
import org.apache.spark.sql.catalyst.analysis.{AnalysisContext, UnresolvedIdentifier, UnresolvedRelation, UnresolvedTable, UnresolvedTableOrView, UnresolvedView}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, Literal, SubqueryExpression, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.execution.command.ShowNamespacesCommand
import org.apache.spark.sql.execution.datasources.DataSource
import org.apache.spark.sql.types.DataType
import org.apache.spark.unsafe.types.UTF8String

/** What the statement would need on a name, said when the user has no privilege on it. */
private sealed trait Need
/** The privilege on the table itself (and any further one a write needs). */
private case class OnTable(privilege: String, also: String*) extends Need
/** A create: ownership of the schema (what a create needs, table there or not). */
private case object OnSchema extends Need

/** The check by name, run on the statement as parsed (PlaceGuards, the hints batch). */
object ByName {
  /** On the nodes already decided: a plan analysed again (a subquery's, the hints batch's
   *  next pass) asks nothing twice. */
  private val Decided = TreeNodeTag[Unit]("sparkgate.byname")

  /** Commands whose UnresolvedIdentifier names a table (elsewhere: a function, a variable). */
  private val TableCommands = Set("CreateTable", "CreateTableAsSelect", "ReplaceTable",
    "ReplaceTableAsSelect", "DropTable", "DropView")

  /** A statement's first word on a relation that only reads it (the rest change it). */
  private def readOnly(command: LogicalPlan): Boolean =
    command.nodeName.startsWith("Describe") || command.nodeName.startsWith("Show")

  def check(session: SparkSession, user: String, plan: LogicalPlan): Unit = {
    // A plan analysed while a statement runs belongs to one checked whole before it ran; a
    // view's (or SQL function's) body is read with its owner's privileges, checked after.
    if (session.sparkContext.getLocalProperty("spark.sql.execution.id") != null) return
    if (AnalysisContext.get.nestedViewDepth > 0) return
    new ByName(session, user).walk(plan, None)
  }

  /** The version of a decision made by name, table there or not (see `byName`). */
  val NameOnly = "by-name"

  private val dataSources = new java.util.concurrent.ConcurrentHashMap[String, java.lang.Boolean]()

  /** Spark's own file formats, read as paths whether or not their module is installed
   *  (without spark-avro, ``avro.`/x` `` is still a path, one Spark then cannot read). */
  private val Formats = Set("parquet", "orc", "csv", "json", "text", "binaryfile", "avro", "xml")

  /** Whether Spark reads ``name.`x` `` as a file of format `name` (a class it can load). */
  def isDataSource(session: SparkSession, name: String): Boolean = {
    val key = name.toLowerCase(java.util.Locale.ROOT)
    if (Formats.contains(key)) return true
    val known = dataSources.get(key)
    if (known != null) return known
    val found = try { DataSource.lookupDataSource(name, session.sessionState.conf); true }
    catch { case _: Throwable => false }
    if (dataSources.size > 10000) dataSources.clear()
    dataSources.put(key, found)
    found
  }
}

private class ByName(session: SparkSession, user: String) {
  import ByName._

  private val decided = mutable.Map[Obj, Boolean]()
  private lazy val code: Boolean = Authz.policy.hasCode(user)
  private val catalog = session.sessionState.catalog

  /** `role`: what a relation below is to the statement (its target's privilege, or SELECT). */
  def walk(plan: LogicalPlan, role: Option[Need]): Unit = {
    plan match {
      case i: InsertIntoStatement =>
        // An overwrite needs DELETE too: decided with INSERT, before Spark matches the
        // query's columns to the table's (its arity error would list a hidden column).
        walk(i.table, Some(if (i.overwrite) OnTable("INSERT", "DELETE") else OnTable("INSERT")))
        walk(i.query, None)
      case w: V2WriteCommand =>
        walk(w.table, Some(OnTable("INSERT"))); walk(w.query, None)
      case d: DeleteFromTable =>
        walk(d.table, Some(OnTable("DELETE"))); expressions(d)
      case u: UpdateTable =>
        walk(u.table, Some(OnTable("UPDATE"))); expressions(u)
      case m: MergeIntoTable =>
        walk(m.targetTable, Some(OnTable("INSERT"))); walk(m.sourceTable, None); expressions(m)
      case c: Command if c.nodeName == "SaveAsV1TableCommand" =>
        // DataFrameWriter.saveAsTable (a class private to Spark): the name in its CatalogTable.
        (c.productElement(0), c.productElement(1), c.productElement(2)) match {
          case (t: CatalogTable, mode: SaveMode, query: LogicalPlan) =>
            if (mark(c)) table(t.identifier.database.toSeq :+ t.identifier.table, mode match {
              case SaveMode.Append => OnTable("INSERT")
              case SaveMode.Overwrite => OnTable("OWNERSHIP")
              case _ => OnSchema
            })
            walk(query, None)
          case _ =>
        }
      case c: CreateView =>
        walk(c.child, Some(if (c.replace) OnTable("OWNERSHIP") else OnSchema)); walk(c.query, None)
      case c: Command =>
        // The table a command is about (its children that name one), and what it needs there.
        val named: Need = c.nodeName match {
          case "CreateTable" | "CreateTableAsSelect" => OnSchema
          case _ if readOnly(c) => OnTable("SELECT")
          case _ => OnTable("OWNERSHIP")
        }
        c.children.foreach {
          case u @ (_: UnresolvedTable | _: UnresolvedTableOrView | _: UnresolvedView) => walk(u, Some(named))
          case u: UnresolvedIdentifier if TableCommands.contains(c.nodeName) => walk(u, Some(named))
          case p => walk(p, None)
        }
        held(c)
        expressions(c)
      case u: UnresolvedRelation =>
        if (mark(u)) relation(u.multipartIdentifier, role.getOrElse(OnTable("SELECT")))
      case u: UnresolvedTableOrView =>
        if (mark(u)) table(u.multipartIdentifier, role.getOrElse(OnTable("SELECT")))
      case u: UnresolvedTable =>
        if (mark(u)) table(u.multipartIdentifier, role.getOrElse(OnTable("SELECT")))
      case u: UnresolvedView =>
        if (mark(u)) table(u.multipartIdentifier, role.getOrElse(OnTable("SELECT")))
      case u: UnresolvedIdentifier =>
        // Only where the command is about a table (a function's or variable's name is not).
        role.foreach(r => if (mark(u)) table(u.nameParts, r))
      case d: UnresolvedDataSource =>
        if (mark(d)) dataSource(d)
      case other =>
        // A node below keeps the role of a target (a SubqueryAlias of `DELETE FROM t AS x`).
        val below = if (other.isInstanceOf[SubqueryAlias]) role else None
        other.children.foreach(walk(_, below))
        expressions(other)
    }
  }

  /** Plans a command holds beside its children (CTAS's query, a cached query). */
  private def held(c: LogicalPlan): Unit = c.productIterator.foreach {
    case p: LogicalPlan if !c.children.exists(_ eq p) => walk(p, None)
    case Some(p: LogicalPlan) if !c.children.exists(_ eq p) => walk(p, None)
    case _ =>
  }

  private def expressions(plan: LogicalPlan): Unit =
    plan.expressions.foreach(_.foreach {
      case s: SubqueryExpression => walk(s.plan, None)
      case _ =>
    })

  /** Whether the node is new to the check (and now decided). */
  private def mark(node: LogicalPlan): Boolean =
    if (node.getTagValue(Decided).isDefined) false
    else { node.setTagValue(Decided, ()); true }

  /** A relation a query names: a temporary view, a file (``csv.`/path` ``), or a table. */
  private def relation(parts: Seq[String], need: Need): Unit = {
    if (catalog.isTempView(parts)) return
    val runsOnFiles = session.sessionState.conf.runSQLonFile
    if (parts.length == 2 && runsOnFiles && isDataSource(session, parts.head)) {
      if (code) return // Spark's own order: the table if there is one, else the path
      // A table in a schema named for a format (json.events) is still a table, to whoever
      // may see it; to anyone else both are refused alike, as the path.
      val obj = qualify(parts).get
      if (visible(obj) && catalog.tableExists(org.apache.spark.sql.catalyst.TableIdentifier(obj.table, Some(obj.schema))))
        return
      deny("CODE", s"path ${parts.last}")
    }
    table(parts, need)
  }

  private def table(parts: Seq[String], need: Need): Unit = {
    if (parts.nonEmpty && catalog.isTempView(parts)) return
    qualify(parts).foreach { obj =>
      if (!visible(obj)) need match {
        case OnTable(privilege, _*) => deny(privilege, obj.name)
        case OnSchema => deny("OWNERSHIP", obj.schemaName)
      }
      else need match {
        // A write the user may not make, on a table they may see: refused before Spark
        // compares its columns with the table's (which names the hidden ones). As lenient as
        // the check after analysis (OWNERSHIP, or the schema's), which decides for good.
        case OnTable(privilege, also @ _*) if privilege != "SELECT" =>
          (privilege +: also).find(p => !may(obj, p)).foreach(p => deny(p, obj.name))
        case _ =>
      }
    }
  }

  private def may(obj: Obj, privilege: String): Boolean = {
    val have = byName(obj).privileges
    have.contains(privilege) || have.contains("OWNERSHIP") ||
      Authz.policy.ownsSchema(user, obj.catalog, obj.schema)
  }

  /** The rules' decision on a name, kept as long as a table's (a second; a GRANT here
   *  forgets it): the check after analysis decides again on the very table, so an answer a
   *  second old refuses early at worst, never lets through. */
  private def byName(obj: Obj): Decision = Authz.decision(user, obj.copy(version = NameOnly))

  /** `spark.read.format(f).load(path)`, `spark.read.csv(path)`, `readStream...load(path)`. */
  private def dataSource(d: UnresolvedDataSource): Unit = {
    val paths = d.paths ++ d.options.collect { case (k, v) if k.equalsIgnoreCase("path") => v }
    if (paths.isEmpty || code) return
    val upload = session.conf.getOption(Authz.UploadKey).filter(_.nonEmpty)
    if (upload.exists(u => paths.forall(_ == u))) return // this session's own load
    deny("CODE", s"path ${paths.mkString(", ")}")
  }

  /** The session catalog's name for `parts`; None for another catalog's. */
  private def qualify(parts: Seq[String]): Option[Obj] = {
    val current = session.sessionState.catalogManager.currentCatalog.name()
    parts match {
      case Seq(t) if current == Authz.SessionCatalog =>
        Some(Obj(Authz.SessionCatalog, catalog.getCurrentDatabase, t))
      case Seq(s, t) if current == Authz.SessionCatalog => Some(Obj(Authz.SessionCatalog, s, t))
      case Seq(c, s, t) if c.equalsIgnoreCase(Authz.SessionCatalog) => Some(Obj(Authz.SessionCatalog, s, t))
      case _ => None
    }
  }

  /** Whether the rules give the user anything on the name, or its schema is theirs. */
  private def visible(obj: Obj): Boolean = decided.getOrElseUpdate(obj,
    byName(obj).privileges.nonEmpty || Authz.policy.ownsSchema(user, obj.catalog, obj.schema))

  private def deny(privilege: String, obj: String): Nothing = {
    val refusal = new InsufficientPrivilege(privilege, obj, user)
    Authz.refused(session, refusal, new Touched)
    throw refusal
  }
}

/** The policy's answer to which schemas a user is shown (sparkgate.engine.authz.Decider). */
trait SchemaLister {
  /** Of `schemas` (a JSON list), those `user` may see: JSON list. */
  def visibleSchemas(user: String, catalog: String, schemas: String): String
}

/** SHOW SCHEMAS (and what lists through it: `spark.catalog.listDatabases()`, HiveServer2's
 *  GetSchemas): only the schemas the user may see something in, or a rule names for them.
 *  Answered as rows at analysis (not a Filter over the command's rows: `listDatabases`
 *  collects the plan's rows without copying them, and a filter's are one reused buffer). */
object SchemasFiltered {
  val Tag = TreeNodeTag[Unit]("sparkgate.schemas")
  private val json = new ObjectMapper()

  def filter(session: SparkSession, user: String, s: ShowNamespacesCommand): LogicalPlan = {
    val all = session.sessionState.catalog.listDatabases(s.pattern.getOrElse("*"))
    val shown: Set[String] = Authz.policy match {
      case lister: SchemaLister =>
        val answer = lister.visibleSchemas(user, Authz.SessionCatalog, json.writeValueAsString(all.asJava))
        json.readTree(answer).elements().asScala.map(_.asText()).toSet
      case _ => Set.empty
    }
    val rows = all.filter(shown.contains).map(n => InternalRow(UTF8String.fromString(n)))
    // The command stays in the plan, never answering (`listDatabases` looks for it there).
    Union(LocalRelation(s.output, rows), Filter(Literal(false), s))
  }
}

/** A listing's predicate, evaluated row by row rather than in generated code: code generated
 *  for a filter writes each row it keeps into one reused buffer, and `spark.catalog.listTables`
 *  collects the plan's rows without copying them (every name would be the last one's). */
case class RowByRow(child: Expression) extends UnaryExpression with CodegenFallback {
  override def dataType: DataType = child.dataType
  override def nullable: Boolean = child.nullable
  override def eval(input: InternalRow): Any = child.eval(input)
  override protected def withNewChildInternal(newChild: Expression): RowByRow = copy(child = newChild)
}
