package sparkgate.authz

import java.util.Properties
import java.util.concurrent.{ConcurrentHashMap, ConcurrentLinkedQueue, CountDownLatch, TimeUnit}

import org.apache.spark.SparkContext
import org.apache.spark.executor.TaskMetrics
import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent, SparkListenerStageCompleted, SparkListenerStageSubmitted, SparkListenerTaskEnd}
import org.apache.spark.sparkgate.{Barrier, ListenerBus}
import org.apache.spark.sql.connect.service.{SparkListenerConnectOperationCanceled, SparkListenerConnectOperationClosed, SparkListenerConnectOperationFailed, SparkListenerConnectOperationFinished, SparkListenerConnectOperationStarted}

/** What one query's Spark tasks cost, summed from Spark's own task metrics as Spark's status
 *  store sums a stage's (AppStatusListener): the same counters, so that the figures equal
 *  what Spark's UI and REST API show for the same jobs. The peak execution memory is the
 *  largest of one task's (Spark's stage figure sums them, which measures nothing). */
final class Cost {
  private var tasks = 0L
  private val sums = new Array[Long](Cost.Summed)
  private var peakMemory = 0L

  def add(m: TaskMetrics): Unit = synchronized {
    tasks += 1
    Cost.figures(m).zipWithIndex.foreach { case (value, i) => sums(i) += value }
    peakMemory = math.max(peakMemory, m.peakExecutionMemory)
  }

  /** The figures as a JSON array, in the order of the store's columns
   *  (sparkgate.store.schema_costs.COST_COLUMNS): tasks, the sums, the peak. */
  def json: String = synchronized {
    ((tasks +: sums.toSeq) :+ peakMemory).mkString("[", ",", "]")
  }
}

object Cost {
  // How many figures are summed: run and CPU time, input bytes and rows, output bytes and
  // rows, shuffle bytes read and written, bytes spilled from memory and to disk.
  val Summed = 10

  /** A task's summed figures, in the store's order. */
  def figures(m: TaskMetrics): Array[Long] = Array(
    m.executorRunTime,
    m.executorCpuTime,
    m.inputMetrics.bytesRead,
    m.inputMetrics.recordsRead,
    m.outputMetrics.bytesWritten,
    m.outputMetrics.recordsWritten,
    m.shuffleReadMetrics.totalBytesRead,
    m.shuffleWriteMetrics.bytesWritten,
    m.memoryBytesSpilled,
    m.diskBytesSpilled)
}

/** A Spark Connect operation that ended, with its cost: its user and session name the
 *  sparkgate session that holds it. */
final case class ConnectCost(user: String, session: String, operation: String, cost: String,
                             touched: String)

/** The engine's listener of Spark's scheduler (spark.extraListeners): the cost of each
 *  sparkgate statement, by the job tag the statement's thread gives its jobs
 *  (StatementThread.begin), and of each Spark Connect operation, by the tag Spark's Connect
 *  service gives its jobs. A task is counted for the tags of the job that submitted its
 *  stage (the stage's properties), so a stage one query computed and another reuses is
 *  counted once, for the first. Pushed by Spark as tasks end; nothing polls. */
class QueryCosts extends SparkListener {
  private val stageTags = new ConcurrentHashMap[(Int, Int), Array[String]]()
  private val costs = new ConcurrentHashMap[String, Cost]()
  // Connect operations started and not yet ended, by job tag: (user, session, operation).
  private val operations = new ConcurrentHashMap[String, (String, String, String)]()
  private val ended = new ConcurrentLinkedQueue[ConnectCost]()
  QueryCosts.current = this

  override def onStageSubmitted(event: SparkListenerStageSubmitted): Unit = {
    val tags = QueryCosts.counted(event.properties)
    if (tags.nonEmpty) {
      stageTags.put((event.stageInfo.stageId, event.stageInfo.attemptNumber()), tags)
    }
  }

  // A streaming query's stage is forgotten when it completes: the query's cost is taken while
  // it runs (takeStream), so nothing else would ever forget them.
  override def onStageCompleted(event: SparkListenerStageCompleted): Unit = {
    val key = (event.stageInfo.stageId, event.stageInfo.attemptNumber())
    val tags = stageTags.get(key)
    if (tags != null && tags.exists(_.startsWith(QueryCosts.StreamPrefix))) stageTags.remove(key)
  }

  override def onTaskEnd(event: SparkListenerTaskEnd): Unit = {
    val tags = stageTags.get((event.stageId, event.stageAttemptId))
    if (tags == null || event.taskMetrics == null) return
    tags.foreach { tag =>
      if (costs.size < QueryCosts.MaxKept || costs.containsKey(tag)) {
        costs.computeIfAbsent(tag, _ => new Cost).add(event.taskMetrics)
      }
    }
  }

  override def onOtherEvent(event: SparkListenerEvent): Unit = event match {
    case barrier: Barrier => barrier.latch.countDown()
    case e: SparkListenerConnectOperationStarted =>
      if (operations.size < QueryCosts.MaxKept) {
        operations.put(e.jobTag, (e.userId, e.sessionId, e.operationId))
      }
    // Its jobs are over when it finished or failed (their ends were posted before); when
    // cancelled, what its interrupted tasks had done by then.
    case e: SparkListenerConnectOperationFinished => connectEnded(e.jobTag)
    case e: SparkListenerConnectOperationFailed => connectEnded(e.jobTag)
    case e: SparkListenerConnectOperationCanceled => connectEnded(e.jobTag)
    case e: SparkListenerConnectOperationClosed => connectEnded(e.jobTag)
    case _ =>
  }

  private def connectEnded(tag: String): Unit = {
    val operation = operations.remove(tag)
    val cost = take(tag)
    val touched = Authz.takeOperationTouched(tag)
    if (operation != null && (cost != null || touched != null)) {
      val (user, session, id) = operation
      ended.add(ConnectCost(user, session, id, cost, touched))
    }
  }

  /** The Connect operations that ended since the last call, with their costs and what their
   *  plans touched (JSON lines: {"user", "session", "operation", "cost"|null,
   *  "touched"|null}); the engine records them. */
  def takeConnectCosts(): String = {
    val lines = new StringBuilder
    var next = ended.poll()
    while (next != null) {
      val fields = new java.util.LinkedHashMap[String, AnyRef]()
      fields.put("user", next.user)
      fields.put("session", next.session)
      fields.put("operation", next.operation)
      fields.put("cost", if (next.cost == null) null else QueryCosts.json.readTree(next.cost))
      fields.put("touched", if (next.touched == null) null else QueryCosts.json.readTree(next.touched))
      lines.append(QueryCosts.json.writeValueAsString(fields)).append('\n')
      next = ended.poll()
    }
    lines.toString
  }

  /** What a streaming query's tasks cost since the last call (JSON); null if none ended. Its
   *  stages are kept: a batch under way goes on being counted, for the next call. */
  def takeStream(queryId: String): String = {
    val cost = costs.remove(QueryCosts.StreamPrefix + queryId)
    if (cost == null) null else cost.json
  }

  /** The tag's cost (JSON), forgotten here with its stages; null if none of its tasks ran. */
  def take(tag: String): String = {
    stageTags.values.removeIf(tags => tags.contains(tag))
    val cost = costs.remove(tag)
    if (cost == null) null else cost.json
  }
}

object QueryCosts {
  // The tags counted: a statement's (claims.py) and a Spark Connect operation's (Spark's
  // ExecuteJobTag). Jobs of other tags (a user's spark.addTag) are not, or nothing would
  // ever take their costs.
  val Prefixes = Seq("sparkgate-statement-", "SparkConnect_OperationTag_")
  private val json = new com.fasterxml.jackson.databind.ObjectMapper()
  // Costs never taken (a statement's thread that died between its jobs and its end) stop
  // being added past this many, so a leak stays bounded.
  val MaxKept = 10000
  // How long a statement's end waits for the listener bus to deliver its tasks' ends.
  val BarrierTimeoutMs = 2000L

  @volatile private[authz] var current: QueryCosts = null

  // A streaming query's micro-batches are counted by the query's id, which Spark sets on
  // their jobs (StreamExecution.QUERY_ID_KEY), under this prefix: a query's cost is taken
  // batch by batch (takeStream), whatever session or restart runs it.
  val StreamPrefix = "stream:"

  private def counted(properties: Properties): Array[String] = {
    if (properties == null) return Array.empty
    val stream = properties.getProperty("sql.streaming.queryId")
    if (stream != null) return Array(StreamPrefix + stream)
    val tags = Option(properties.getProperty("spark.job.tags")).getOrElse("")
    tags.split(",").filter(tag => Prefixes.exists(tag.startsWith))
  }

  /** The cost of the statement tagged `tag`, once the listener has received every task end
   *  posted so far (its jobs are over: their ends were posted before they returned). */
  def take(sc: SparkContext, tag: String): String = {
    val listener = current
    if (listener == null) return null
    val barrier = new Barrier(new CountDownLatch(1))
    ListenerBus.post(sc, barrier)
    barrier.latch.await(BarrierTimeoutMs, TimeUnit.MILLISECONDS) // late: what it has so far
    listener.take(tag)
  }

  /** `QueryCosts.takeStream` of the engine's listener (null without one). `settle`: the query
   *  stopped; first let the listener receive every task end posted so far, as `take` does. */
  def streamCost(sc: SparkContext, queryId: String, settle: Boolean): String = {
    val listener = current
    if (listener == null) return null
    if (settle) {
      val barrier = new Barrier(new CountDownLatch(1))
      ListenerBus.post(sc, barrier)
      barrier.latch.await(BarrierTimeoutMs, TimeUnit.MILLISECONDS)
    }
    listener.takeStream(queryId)
  }

  /** `QueryCosts.takeConnectCosts` of the engine's listener ("" without one). */
  def connectCosts(): String = {
    val listener = current
    if (listener == null) "" else listener.takeConnectCosts()
  }
}
