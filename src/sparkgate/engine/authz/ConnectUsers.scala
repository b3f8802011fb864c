// Which sparkgate user a Spark Connect session belongs to: the user id sparkgate's Connect
// door put in the client's requests, as Spark's session manager keeps it. In Spark's package
// because the session manager is private to it.
package org.apache.spark.sql.connect.service

import org.apache.spark.sql.SparkSession

object SparkgateConnectUsers {
  def userOf(session: SparkSession): Option[String] = {
    val manager = SparkConnectService.sessionManager
    manager.listActiveSessions.iterator
      .map(info => manager.getIsolatedSessionIfPresent(SessionKey(info.userId, info.sessionId)))
      .collectFirst { case Some(holder) if holder.session eq session => holder.userId }
  }
}
