package sparkgate.authz

import java.lang.management.ManagementFactory

import org.apache.spark.TaskContext
import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, SparkPlugin}
import org.apache.spark.sparkgate.TaskCpu
import org.apache.spark.util.TaskCompletionListener

/** The CPU time of a task that ends killed (a cancelled query's) or failed, which Spark's
 *  executor leaves at 0: it sets a task's executorCpuTime only when the task succeeds, and
 *  for a killed or failed one only its run and GC time (Executor.TaskRunner's
 *  collectAccumulatorsAndResetStatusOnFailure). The task's end (TaskKilled, ExceptionFailure)
 *  still carries its metrics to the driver, where QueryCosts counts them: without this a
 *  cancelled query's cost read "0.000 s CPU, 12.079 s run".
 *
 *  An executor plugin (spark.plugins): `onTaskStart` runs in the task's thread once its
 *  TaskContext is set (Task.run), and the completion listener it adds runs in that thread
 *  too, inside Task.run, before the executor collects the task's metrics; Spark's internal
 *  metrics are sent whether the task succeeded or not. A task that succeeds is left alone:
 *  the executor measures it itself, after this listener, and overwrites the figure. */
class KilledTaskCpu extends SparkPlugin {
  override def driverPlugin(): DriverPlugin = null
  override def executorPlugin(): ExecutorPlugin = new KilledTaskCpu.OnExecutor
}

object KilledTaskCpu {
  private val threads = ManagementFactory.getThreadMXBean

  final class OnExecutor extends ExecutorPlugin {
    override def onTaskStart(): Unit = {
      val context = TaskContext.get()
      if (context == null || !threads.isCurrentThreadCpuTimeSupported) return
      val thread = Thread.currentThread()
      val start = threads.getCurrentThreadCpuTime
      context.addTaskCompletionListener(new TaskCompletionListener {
        override def onTaskCompletion(ended: TaskContext): Unit = {
          // Another thread's clock would measure that thread: only the task's own counts.
          if ((ended.isInterrupted() || ended.isFailed()) && (Thread.currentThread() eq thread)) {
            TaskCpu.set(ended.taskMetrics(), threads.getCurrentThreadCpuTime - start)
          }
        }
      })
    }
  }
}
