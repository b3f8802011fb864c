"""The PySpark side: engine processes that claim sessions and statements from the store and
run them on Spark. Only this package (and tables/, streaming/) imports PySpark."""
