"""Data access control inside an engine: a Spark SQL extension (``Authz.scala``, compiled at
install by :mod:`.build`) that checks every plan of every session, and the policy it asks
(:mod:`.decider`)."""
