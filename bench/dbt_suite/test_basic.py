"""dbt's basic adapter suite and the other model/seed/source tests, as dbt-spark runs them for its
``apache_spark`` (thrift) profile.

Included as in dbt-spark: the basic suite (simple materializations, singular and generic tests,
ephemeral models, incrementals, adapter methods, ``--empty``), ``dbt show``, empty seeds, seed
column types, ``get_columns_in_relation`` and source freshness.
Skipped as in dbt-spark for apache_spark (they need Delta, Hudi or Iceberg tables, whose jars
the pyspark wheel does not ship and Maven cannot be reached here): snapshots (dbt-spark's
snapshot materialization refuses any other file format), ``dbt clone`` and grants.
Extras (marked ``extra``: not in dbt-spark's suite, but cheap and plain Spark SQL): relation
cache population, switching a model between view, table and incremental, dropping a schema by
name, a table from a seed, an incremental model run twice unchanged, and query comments.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from dbt.tests.adapter.basic.test_adapter_methods import BaseAdapterMethod
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_ephemeral import BaseEphemeral
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import (
    BaseIncremental,
    BaseIncrementalNotSchemaChange,
)
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests
from dbt.tests.adapter.basic.test_singular_tests_ephemeral import BaseSingularTestsEphemeral
from dbt.tests.adapter.basic.test_snapshot_check_cols import BaseSnapshotCheckCols
from dbt.tests.adapter.basic.test_snapshot_timestamp import BaseSnapshotTimestamp
from dbt.tests.adapter.basic.test_table_materialization import BaseTableMaterialization
from dbt.tests.adapter.caching.test_caching import (
    BaseCachingLowercaseModel,
    BaseCachingSelectedSchemaOnly,
    BaseCachingUppercaseModel,
)
from dbt.tests.adapter.dbt_show.test_dbt_show import (
    BaseShowDoesNotHandleDoubleLimit,
    BaseShowLimit,
    BaseShowSqlHeader,
)
from dbt.tests.adapter.empty.test_empty import BaseTestEmpty, BaseTestEmptyInlineSourceRef
from dbt.tests.adapter.query_comment.test_query_comment import (
    BaseEmptyQueryComments,
    BaseMacroQueryComments,
    BaseNullQueryComments,
    BaseQueryComments,
)
from dbt.tests.adapter.relations.test_changing_relation_type import (
    BaseChangeRelationTypeValidator,
)
from dbt.tests.adapter.relations.test_dropping_schema_named import BaseDropSchemaNamed
from dbt.tests.adapter.simple_seed.test_seed import BaseTestEmptySeed
from dbt.tests.adapter.simple_snapshot.test_snapshot import BaseSimpleSnapshot, BaseSnapshotCheck
from dbt.tests.util import check_relations_equal_with_relations, relation_from_name, run_dbt

NO_DELTA = (
    "needs Delta/Hudi/Iceberg tables (dbt-spark skips it for apache_spark too): the pyspark "
    "wheel has no such jars and Maven is out of reach here"
)

# Snapshots in dbt-spark write through a Delta (or Hudi/Iceberg) table: on the thrift profile
# with plain Spark the materialization fails at compile time whatever the server.
SNAPSHOT_CONFIG = {"seeds": {"+file_format": "delta"}, "snapshots": {"+file_format": "delta"}}


class TestSimpleMaterializations(BaseSimpleMaterializations):
    pass


class TestSingularTests(BaseSingularTests):
    pass


class TestSingularTestsEphemeral(BaseSingularTestsEphemeral):
    pass


class TestEmpty(BaseEmpty):
    pass


class TestEphemeral(BaseEphemeral):
    pass


class TestIncremental(BaseIncremental):
    pass


class TestGenericTests(BaseGenericTests):
    pass


class TestAdapterMethod(BaseAdapterMethod):
    pass


@pytest.mark.skip(reason=NO_DELTA)
class TestSnapshotCheckCols(BaseSnapshotCheckCols):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, object]:
        return SNAPSHOT_CONFIG


@pytest.mark.skip(reason=NO_DELTA)
class TestSnapshotTimestamp(BaseSnapshotTimestamp):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, object]:
        return SNAPSHOT_CONFIG


@pytest.mark.skip(reason=NO_DELTA)
class TestSimpleSnapshot(BaseSimpleSnapshot):
    pass


@pytest.mark.skip(reason=NO_DELTA)
class TestSnapshotCheck(BaseSnapshotCheck):
    pass


# -- dbt show, --empty, seeds ----------------------------------------------------------------


class TestShowLimit(BaseShowLimit):
    pass


class TestShowSqlHeader(BaseShowSqlHeader):
    pass


class TestShowDoesNotHandleDoubleLimit(BaseShowDoesNotHandleDoubleLimit):
    # Spark answers [PARSE_SYNTAX_ERROR] Syntax error at or near 'limit', but the base class
    # looks for it in a repr of the exception that pytest cuts short before the message.
    DATABASE_ERROR_MESSAGE = "Database Error"


class TestEmptyFlag(BaseTestEmpty):
    pass


class TestEmptyFlagInlineSourceRef(BaseTestEmptyInlineSourceRef):
    pass


class TestEmptySeed(BaseTestEmptySeed):
    pass


# Hive's CSV loading makes every seed column a string unless column_types says otherwise: a
# generic test checks the types the server reports for the seeded table.
COLUMN_TYPES_TEST = """
{% test column_types(model, expected) %}
    {% if not execute %}{{ return(None) }}{% endif %}
    {% set columns = adapter.get_columns_in_relation(model) %}
    {% set actual = {} %}
    {% for column in columns %}
        {% do actual.update({column.name | lower: column.dtype | lower}) %}
    {% endfor %}
    {% set bad = [] %}
    {% for name, dtype in expected.items() %}
        {% if actual.get(name) != dtype %}
            {% do bad.append(name ~ ' is ' ~ actual.get(name) ~ ', not ' ~ dtype) %}
        {% endif %}
    {% endfor %}
    {% if (actual | length) != (expected | length) %}
        {% do bad.append('columns ' ~ (actual | list) ~ ' vs ' ~ (expected | list)) %}
    {% endif %}
    {% do log('column type mismatches: ' ~ bad, info=True) %}
    {% for failure in bad %}
    select '{{ failure }}' as failure union all
    {% endfor %}
    select * from (select 'none' as failure) as nothing where 1 = 0
{% endtest %}
"""

PAYMENTS_CSV = """id,orderid,paymentmethod,status,amount,amount_usd,created
1,1,credit_card,success,1000,10.00,2018-01-01
2,2,credit_card,success,2000,20.00,2018-01-02
3,3,coupon,success,100,1.00,2018-01-04
4,4,coupon,success,2500,25.00,2018-01-05
5,5,bank_transfer,fail,1700,17.00,2018-01-05
"""

PAYMENTS_YML = """
seeds:
  - name: payments
    config:
      column_types:
        id: string
        orderid: string
        paymentmethod: string
        status: string
        amount: integer
        amount_usd: decimal(20,2)
        created: timestamp
    data_tests:
      - column_types:
          expected:
            id: string
            orderid: string
            paymentmethod: string
            status: string
            amount: int
            amount_usd: decimal(20,2)
            created: timestamp
"""


class TestSeedColumnTypes:
    @pytest.fixture(scope="class")
    def macros(self) -> dict[str, str]:
        return {"test_column_types.sql": COLUMN_TYPES_TEST}

    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"payments.csv": PAYMENTS_CSV, "schema.yml": PAYMENTS_YML}

    def test_column_seed_type(self, project: Any) -> None:
        assert len(run_dbt(["seed"])) == 1
        run_dbt(["test"])


# -- catalog reads ----------------------------------------------------------------------------

COLUMNS_CHILD = "select 1 as id, 'a' as name, cast(2.5 as decimal(4, 2)) as amount"

COLUMNS_PARENT = """
{% set columns = adapter.get_columns_in_relation(ref('child')) %}
select
{% for column in columns %}
    {{ adapter.quote(column.column) }}{{ ',' if not loop.last }}
{% endfor %}
from {{ ref('child') }}
"""


class TestColumnsInRelation:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"child.sql": COLUMNS_CHILD, "parent.sql": COLUMNS_PARENT}

    def test_get_columns_in_relation(self, project: Any) -> None:
        run_dbt(["run"])
        adapter = project.adapter
        child = relation_from_name(adapter, "child")
        parent = relation_from_name(adapter, "parent")
        check_relations_equal_with_relations(adapter, [child, parent])


FRESHNESS_SCHEMA = """
version: 2
sources:
  - name: test_source
    schema: "{{ env_var('DBT_CONFORMANCE_FRESHNESS_SCHEMA') }}"
    freshness:
      warn_after: {count: 10, period: hour}
      error_after: {count: 1, period: day}
    tables:
      - name: stale
        loaded_at_field: last_modified
      - name: fresh
        loaded_at_field: last_modified
"""

STALE_CSV = """id,name,last_modified
1,Martin,2023-01-01 00:00:00
2,Jeter,2023-02-01 00:00:00
"""

FRESH_MODEL = (
    "{{ config(materialized='table') }} select 1 as id, current_timestamp() as last_modified"
)


class TestSourceFreshness:
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"stale.csv": STALE_CSV}

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"schema.yml": FRESHNESS_SCHEMA, "fresh.sql": FRESH_MODEL}

    @pytest.fixture(scope="class", autouse=True)
    def setup(self, project: Any) -> Iterator[None]:
        os.environ["DBT_CONFORMANCE_FRESHNESS_SCHEMA"] = project.test_schema
        run_dbt(["seed"])
        run_dbt(["run"])
        yield
        del os.environ["DBT_CONFORMANCE_FRESHNESS_SCHEMA"]

    @pytest.mark.parametrize(("source", "status"), [("stale", "error"), ("fresh", "pass")])
    def test_source_freshness(self, project: Any, source: str, status: str) -> None:
        results = run_dbt(
            ["source", "freshness", "--select", f"source:test_source.{source}"],
            expect_pass=status == "pass",
        )
        assert len(results) == 1
        assert results[0].status == status


# -- not in dbt-spark's suite -----------------------------------------------------------------


class SparkCaching:
    """The base class compares the cached relation's database, schema and identifier; Spark
    relations have no database (None), so only schema and identifier are compared here."""

    def run_and_inspect_cache(self, project: Any, run_args: list[str] | None = None) -> None:
        run_dbt(run_args)
        relations = list(project.adapter.cache.relations)
        assert len(relations) == 1
        first = relations[0]
        assert first.schema == project.test_schema.lower()
        run_dbt(run_args)  # now the cache is filled from the server's listing
        relations = list(project.adapter.cache.relations)
        assert len(relations) == 1
        for key in ("schema", "identifier"):
            assert getattr(first, key).lower() == getattr(relations[0], key).lower()


@pytest.mark.extra
class TestCachingLowercaseModel(SparkCaching, BaseCachingLowercaseModel):
    pass


@pytest.mark.extra
class TestCachingUppercaseModel(SparkCaching, BaseCachingUppercaseModel):
    pass


@pytest.mark.extra
class TestCachingSelectedSchemaOnly(SparkCaching, BaseCachingSelectedSchemaOnly):
    pass


@pytest.mark.extra
class TestChangeRelationTypes(BaseChangeRelationTypeValidator):
    pass


@pytest.mark.extra
class TestDropSchemaNamed(BaseDropSchemaNamed):
    pass


@pytest.mark.extra
class TestTableMaterialization(BaseTableMaterialization):
    pass


@pytest.mark.extra
class TestIncrementalNotSchemaChange(BaseIncrementalNotSchemaChange):
    pass


# Every statement dbt sends starts with its query comment; these change it (two lines, a
# macro's text, none at all).
@pytest.mark.extra
class TestQueryComments(BaseQueryComments):
    pass


@pytest.mark.extra
class TestMacroQueryComments(BaseMacroQueryComments):
    pass


@pytest.mark.extra
class TestNullQueryComments(BaseNullQueryComments):
    pass


@pytest.mark.extra
class TestEmptyQueryComments(BaseEmptyQueryComments):
    pass
