"""Incremental models: dbt-spark's strategy tests, on_schema_change and microbatch, as dbt-spark
runs them for its ``apache_spark`` profile.

Included as in dbt-spark: the default (append) strategy, insert_overwrite with and without
partitions (parquet), invalid strategy/file format configurations (compile errors),
on_schema_change with append and insert_overwrite, column names with special characters, and
microbatch (no unique key).
Skipped as in dbt-spark for apache_spark: merge, unique keys, predicates and
merge_exclude_columns (they need Delta); Hudi strategies (dbt-spark's apache_spark image has the
Hudi jars, the pyspark wheel does not).
"""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.adapter.incremental.test_incremental_merge_exclude_columns import (
    BaseMergeExcludeColumns,
)
from dbt.tests.adapter.incremental.test_incremental_microbatch import BaseMicrobatch
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import (
    BaseIncrementalOnSchemaChangeSetup,
)
from dbt.tests.adapter.incremental.test_incremental_predicates import BaseIncrementalPredicates
from dbt.tests.adapter.incremental.test_incremental_unique_id import BaseIncrementalUniqueKey
from dbt.tests.adapter.simple_seed.test_seed import SeedConfigBase
from dbt.tests.util import check_relations_equal, run_dbt

NO_DELTA = (
    "needs Delta tables (dbt-spark skips it for apache_spark too): the pyspark wheel has no "
    "Delta jars and Maven is out of reach here"
)


def incremental_model(*config: str, extra_column: bool = False) -> str:
    """Two rows on the first run, then (2, 'yo') and (3, 'anyway') on the next ones."""
    colour = (", 'blue' as color", ", 'red' as color", ", 'green' as color", ", 'purple' as color")
    c = colour if extra_column else ("", "", "", "")
    return f"""
{{{{ config(materialized='incremental'{"".join(", " + item for item in config)}) }}}}
{{% if not is_incremental() %}}
select cast(1 as bigint) as id, 'hello' as msg{c[0]}
union all
select cast(2 as bigint) as id, 'goodbye' as msg{c[1]}
{{% else %}}
select cast(2 as bigint) as id, 'yo' as msg{c[2]}
union all
select cast(3 as bigint) as id, 'anyway' as msg{c[3]}
{{% endif %}}
"""


EXPECTED_APPEND = "id,msg\n1,hello\n2,goodbye\n2,yo\n3,anyway\n"
EXPECTED_OVERWRITE = "id,msg\n2,yo\n3,anyway\n"
EXPECTED_UPSERT = "id,msg\n1,hello\n2,yo\n3,anyway\n"


class IncrementalStrategies(SeedConfigBase):
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {
            "expected_append.csv": EXPECTED_APPEND,
            "expected_overwrite.csv": EXPECTED_OVERWRITE,
            "expected_upsert.csv": EXPECTED_UPSERT,
        }

    @staticmethod
    def seed_and_run_twice() -> None:
        run_dbt(["seed"])
        run_dbt(["run"])
        run_dbt(["run"])

    @staticmethod
    def assert_relations(project: Any, relation: str, expected: str) -> None:
        check_relations_equal(project.adapter, [relation, expected])


class TestDefaultAppend(IncrementalStrategies):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"default_append.sql": incremental_model()}

    def test_default_append(self, project: Any) -> None:
        self.seed_and_run_twice()
        self.assert_relations(project, "default_append", "expected_append")


class TestInsertOverwrite(IncrementalStrategies):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        strategy = ("incremental_strategy='insert_overwrite'", "file_format='parquet'")
        return {
            "insert_overwrite_no_partitions.sql": incremental_model(*strategy),
            "insert_overwrite_partitions.sql": incremental_model(*strategy, "partition_by='id'"),
        }

    def test_insert_overwrite(self, project: Any) -> None:
        self.seed_and_run_twice()
        self.assert_relations(project, "insert_overwrite_no_partitions", "expected_overwrite")
        self.assert_relations(project, "insert_overwrite_partitions", "expected_upsert")


class TestBadStrategies(IncrementalStrategies):
    # dbt-spark's bad_insert_overwrite_delta model is left out: dbt-spark 1.10 no longer
    # refuses insert_overwrite on Delta at compile time, so without Delta it fails at run time.
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "bad_file_format.sql": incremental_model("file_format='something_else'"),
            "bad_merge_not_delta.sql": incremental_model("incremental_strategy='merge'"),
            "bad_strategy.sql": incremental_model("incremental_strategy='something_else'"),
        }

    def test_bad_strategies(self, project: Any) -> None:
        results = run_dbt(["run"], expect_pass=False)
        assert len(results) == 3
        for result in results:
            assert result.status == "error"
            assert "Compilation Error in model" in result.message


@pytest.mark.skip(reason=NO_DELTA)
class TestDeltaStrategies(IncrementalStrategies):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "merge_unique_key.sql": incremental_model(
                "incremental_strategy='merge'", "file_format='delta'", "unique_key='id'"
            )
        }

    def test_delta_strategies(self, project: Any) -> None:
        self.seed_and_run_twice()
        self.assert_relations(project, "merge_unique_key", "expected_upsert")


@pytest.mark.skip(reason=NO_DELTA)
class TestUniqueKey(BaseIncrementalUniqueKey):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {"models": {"+file_format": "delta", "+incremental_strategy": "merge"}}


@pytest.mark.skip(reason=NO_DELTA)
class TestIncrementalPredicatesMerge(BaseIncrementalPredicates):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {
            "models": {
                "+incremental_predicates": ["dbt_internal_dest.id != 2"],
                "+incremental_strategy": "merge",
                "+file_format": "delta",
            }
        }


@pytest.mark.skip(reason=NO_DELTA)
class TestMergeExcludeColumns(BaseMergeExcludeColumns):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {"models": {"+file_format": "delta"}}


# -- on_schema_change -------------------------------------------------------------------------


class OnSchemaChangeIgnoreFail(BaseIncrementalOnSchemaChangeSetup):
    def test_run_incremental_ignore(self, project: Any) -> None:
        self.run_twice_and_assert(
            "model_a incremental_ignore incremental_ignore_target",
            "incremental_ignore",
            "incremental_ignore_target",
            project,
        )

    def test_run_incremental_fail_on_schema_change(self, project: Any) -> None:
        select = "model_a incremental_fail"
        run_dbt(["run", "--models", select, "--full-refresh"])
        results = run_dbt(["run", "--models", select], expect_pass=False)
        assert "Compilation Error" in results[1].message


class TestAppendOnSchemaChange(OnSchemaChangeIgnoreFail):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {"models": {"+incremental_strategy": "append"}}


class TestInsertOverwriteOnSchemaChange(OnSchemaChangeIgnoreFail):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {
            "models": {
                "+file_format": "parquet",
                "+partition_by": "id",
                "+incremental_strategy": "insert_overwrite",
            }
        }


SPECIAL_COLUMNS = "`field with space`, `select`, `field-with-dash`, `field.with.dots`"

MODEL_A_SPECIAL_CHARS = """
{{ config(materialized='table') }}
select 1 as id, 'aaa' as `field with space`, 'bbb' as `select`, 111 as `field-with-dash`,
  'TTT' as `field.with.dots`
union all select 2, 'ccc', 'ddd', 222, 'UUU'
union all select 3, 'eee', 'fff', 333, 'VVV'
union all select 4, 'ggg', 'hhh', 444, 'WWW'
union all select 5, 'iii', 'jjj', 555, 'XXX'
"""

INCREMENTAL_SPECIAL_CHARS = f"""
{{{{ config(materialized='incremental', unique_key='id', on_schema_change='append_new_columns') }}}}
with source_data as (select * from {{{{ ref('model_a_special_chars') }}}})
{{% if is_incremental() %}}
select id, {SPECIAL_COLUMNS}
from source_data where id not in (select id from {{{{ this }}}})
{{% else %}}
select id, `field with space`, `select` from source_data where id <= 3
{{% endif %}}
"""

INCREMENTAL_SPECIAL_CHARS_TARGET = """
{{ config(materialized='table') }}
select id, `field with space`, `select`,
  case when id <= 3 then null else `field-with-dash` end as `field-with-dash`,
  case when id <= 3 then null else `field.with.dots` end as `field.with.dots`
from {{ ref('model_a_special_chars') }}
"""


class TestAppendOnSchemaChangeSpecialChars(BaseIncrementalOnSchemaChangeSetup):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {"models": {"+incremental_strategy": "append"}}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "model_a_special_chars.sql": MODEL_A_SPECIAL_CHARS,
            "incremental_special_chars.sql": INCREMENTAL_SPECIAL_CHARS,
            "incremental_special_chars_target.sql": INCREMENTAL_SPECIAL_CHARS_TARGET,
        }

    def test_append_new_columns_with_special_characters(self, project: Any) -> None:
        select = "model_a_special_chars incremental_special_chars incremental_special_chars_target"
        run_dbt(["run", "--models", select])
        run_dbt(["run", "--models", select])
        check_relations_equal(
            project.adapter, ["incremental_special_chars", "incremental_special_chars_target"]
        )


# -- microbatch -------------------------------------------------------------------------------

# dbt-spark's microbatch overwrites one day's partition per batch: it needs no unique key, but
# a partition_by column of the batch's grain (dbt-spark 1.10 refuses to run without one).
MICROBATCH_NO_UNIQUE_KEY = """
{{ config(materialized='incremental', incremental_strategy='microbatch', event_time='event_time',
          batch_size='day', begin=modules.datetime.datetime(2020, 1, 1, 0, 0, 0),
          file_format='parquet', partition_by=['date_day']) }}
select *, cast(event_time as date) as date_day from {{ ref('input_model') }}
"""


class TestMicrobatch(BaseMicrobatch):
    @pytest.fixture(scope="class")
    def microbatch_model_sql(self) -> str:
        return MICROBATCH_NO_UNIQUE_KEY
