"""Writes src/spark-sql.json: Spark SQL's keywords and built-in functions, as the pyspark this
checkout installs lists them (``sql_keywords()``, ``SHOW FUNCTIONS``), for the worksheet's
highlighting and completion. Run again after a Spark upgrade, and commit the file:

    ../.venv/bin/python spark_names.py
"""

from __future__ import annotations

import json
from pathlib import Path

from pyspark.sql import SparkSession

spark = SparkSession.builder.master("local[1]").appName("spark-names").getOrCreate()
try:
    keywords = sorted(
        {row[0].lower() for row in spark.sql("SELECT keyword FROM sql_keywords()").collect()}
    )
    functions = sorted(
        {
            row[0]
            for row in spark.sql("SHOW SYSTEM FUNCTIONS").collect()
            if row[0].replace("_", "").isalnum()  # not the operators (+, ||, ...)
        }
    )
    names = {"spark": spark.version, "keywords": keywords, "functions": functions}
    target = Path(__file__).parent / "src" / "spark-sql.json"
    target.write_text(json.dumps(names, indent=0) + "\n")
    print(f"{len(keywords)} keywords, {len(functions)} functions of Spark {spark.version}")
finally:
    spark.stop()
