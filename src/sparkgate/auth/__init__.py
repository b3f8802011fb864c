"""Users: who is calling (authenticators), what they may do (access rules), and what they did
(audit). Every front door (native API, Livy API, Thrift, dashboard) calls ``Users``; none keeps
its own copy of these checks.
"""
