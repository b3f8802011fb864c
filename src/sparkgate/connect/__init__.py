"""The Spark Connect door (``sc://``): pyspark's DataFrames through sparkgate, forwarded to the
Connect service inside the user's engine, with sparkgate's users, rights, queries and audit."""
