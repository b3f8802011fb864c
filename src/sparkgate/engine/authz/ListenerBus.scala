// In Spark's own package because what it reaches is private[spark]: posting an event on the
// driver's listener bus (SparkContext.listenerBus) and keeping an event out of the event log.
package org.apache.spark.sparkgate

import java.util.concurrent.CountDownLatch

import org.apache.spark.SparkContext
import org.apache.spark.scheduler.SparkListenerEvent

/** An event that only marks a point in the listener bus: a listener that receives it has
 *  received every event posted before it (a queue delivers in order). */
final class Barrier(val latch: CountDownLatch) extends SparkListenerEvent {
  override protected[spark] def logEvent: Boolean = false
}

object ListenerBus {
  def post(sc: SparkContext, event: SparkListenerEvent): Unit = sc.listenerBus.post(event)
}
