// In Spark's own package because what it reaches is private[spark]: a task's metric setters.
package org.apache.spark.sparkgate

import org.apache.spark.executor.TaskMetrics

/** Sets a task's CPU time (ns) for sparkgate.authz.KilledTaskCpu. */
object TaskCpu {
  def set(metrics: TaskMetrics, nanos: Long): Unit = metrics.setExecutorCpuTime(nanos)
}
