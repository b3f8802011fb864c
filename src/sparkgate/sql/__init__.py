"""sparkgate's SQL extensions (CREATE STREAM, SAVE STREAM, STOP STREAM): pure parsing.

    from sparkgate.sql.parser import parse
    parse("SAVE STREAM clicks TO console")  # SaveStream(view="clicks", provider="console", ...)
    parse("SELECT 1")                       # PassThrough("SELECT 1")

``parser`` (statements), ``script`` (splitting scripts), ``durations`` (``50s``, ``100ms``),
``statements`` (the parsed values) and ``errors`` (with line and position). Submodules are
imported where needed: the lexer loads sqlglot's Spark dialect, which costs ~0.1 s.
"""
