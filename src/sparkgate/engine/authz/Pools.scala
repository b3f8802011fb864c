// In Spark's own package because what it reaches is private[spark]: the task scheduler's root
// pool, to which a pool of a chosen weight is added while the driver runs (Spark's FAIR
// scheduler otherwise makes an unknown pool with weight 1, and reads weights only from an
// allocation file at start).
package org.apache.spark.sparkgate

import org.apache.spark.SparkContext
import org.apache.spark.scheduler.{Pool, SchedulingMode, TaskSchedulerImpl}

object Pools {
  /** A FAIR pool named `name` of weight `weight`, its jobs sharing it fairly among them,
   *  made unless it exists (a pool's weight is fixed once made: the first statement of a
   *  group in this driver sets it). */
  def ensure(sc: SparkContext, name: String, weight: Int): Unit = sc.taskScheduler match {
    case scheduler: TaskSchedulerImpl if scheduler.rootPool != null =>
      val root = scheduler.rootPool
      if (root.getSchedulableByName(name) == null) root.synchronized {
        if (root.getSchedulableByName(name) == null) {
          root.addSchedulable(new Pool(name, SchedulingMode.FAIR, 0, weight))
        }
      }
    case _ =>
  }
}
