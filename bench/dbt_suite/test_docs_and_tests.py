"""Data tests, unit tests, documentation and contracts, as dbt-spark runs them for its
``apache_spark`` profile.

Included as in dbt-spark: storing test failures (dbt-spark's own variant and the six
``store_failures_as`` cases), unit tests (types, case insensitivity, invalid input).
Skipped as in dbt-spark for apache_spark: every persist_docs and constraints test (they write
Delta tables), ``dbt clone`` and grants (Delta, Unity Catalog).
Extras (marked ``extra``), written for plain parquet tables, because they probe what a HiveServer2
server must get right for dbt: model contracts (dbt compares the column types the server
reports for a query, ``*_TYPE`` names over Thrift, with the contract in YAML) for table, view and
incremental models; and relation comments persisted through CREATE TABLE/VIEW ... COMMENT, read
back with DESCRIBE EXTENDED.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
import yaml
from dbt.tests.adapter.constraints import fixtures as constraints
from dbt.tests.adapter.constraints.test_constraints import (
    BaseIncrementalConstraintsColumnsEqual,
    BaseTableConstraintsColumnsEqual,
    BaseViewConstraintsColumnsEqual,
)
from dbt.tests.adapter.store_test_failures_tests import basic
from dbt.tests.adapter.store_test_failures_tests.test_store_test_failures import (
    TEST_AUDIT_SCHEMA_SUFFIX,
    StoreTestFailuresBase,
)
from dbt.tests.adapter.unit_testing.test_case_insensitivity import BaseUnitTestCaseInsensivity
from dbt.tests.adapter.unit_testing.test_invalid_input import BaseUnitTestInvalidInput
from dbt.tests.adapter.unit_testing.test_types import BaseUnitTestingTypes
from dbt.tests.util import run_dbt

# -- storing test failures --------------------------------------------------------------------


class TestStoreTestFailures(StoreTestFailuresBase):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {
            "seeds": {"quote_columns": True},
            "data_tests": {"+schema": TEST_AUDIT_SCHEMA_SUFFIX, "+store_failures": True},
        }

    @pytest.fixture(scope="function", autouse=True)
    def teardown_method(self, project: Any) -> Any:
        yield
        with project.adapter.connection_named("__test"):
            relation = project.adapter.Relation.create(
                database=project.database,
                schema=f"{project.test_schema}_{TEST_AUDIT_SCHEMA_SUFFIX}",
            )
            project.adapter.drop_schema(relation)

    def test_store_and_assert(self, project: Any) -> None:
        self.run_tests_store_one_failure(project)
        self.run_tests_store_failures_and_assert(project)


class TestStoreTestFailuresAsInteractions(basic.StoreTestFailuresAsInteractions):
    pass


class TestStoreTestFailuresAsProjectLevelOff(basic.StoreTestFailuresAsProjectLevelOff):
    pass


class TestStoreTestFailuresAsProjectLevelView(basic.StoreTestFailuresAsProjectLevelView):
    pass


class TestStoreTestFailuresAsGeneric(basic.StoreTestFailuresAsGeneric):
    pass


class TestStoreTestFailuresAsProjectLevelEphemeral(basic.StoreTestFailuresAsProjectLevelEphemeral):
    pass


class TestStoreTestFailuresAsExceptions(basic.StoreTestFailuresAsExceptions):
    pass


# -- unit tests -------------------------------------------------------------------------------


class TestUnitTestingTypes(BaseUnitTestingTypes):
    @pytest.fixture
    def data_types(self) -> list[list[str]]:
        # sql_value, yaml_value
        return [
            ["1", "1"],
            ["2.0", "2.0"],
            ["'12345'", "12345"],
            ["'string'", "string"],
            ["true", "true"],
            ["date '2011-11-11'", "2011-11-11"],
            ["timestamp '2013-11-03 00:00:00-0'", "2013-11-03 00:00:00-0"],
        ]


class TestUnitTestCaseInsensitivity(BaseUnitTestCaseInsensivity):
    pass


class TestUnitTestInvalidInput(BaseUnitTestInvalidInput):
    pass


# -- contracts (extra) ------------------------------------------------------------------------


def contract_yml() -> str:
    """dbt's contract YAML for Spark: ``string`` for text, and no constraints (dbt-spark turns
    them into ALTER TABLE statements that only Delta tables take)."""
    document = yaml.safe_load(constraints.model_schema_yml.replace("text", "string"))
    for model in document["models"]:
        model.pop("constraints", None)
        for column in model.get("columns", []):
            column.pop("constraints", None)
    return str(yaml.safe_dump(document, sort_keys=False))


CONTRACT_YML = contract_yml()


class ThriftContractTypes:
    """The type names dbt-spark's thrift connection reports for a query's columns (PyHive's
    cursor.description: TTypeId names), and the Spark SQL types a contract declares."""

    @pytest.fixture
    def string_type(self) -> str:
        return "STRING_TYPE"

    @pytest.fixture
    def int_type(self) -> str:
        return "INT_TYPE"

    @pytest.fixture
    def schema_string_type(self) -> str:
        return "STRING"

    @pytest.fixture
    def schema_int_type(self) -> str:
        return "INT"

    @pytest.fixture
    def data_types(self, int_type: str, schema_int_type: str) -> list[list[str]]:
        # sql_column_value, schema_data_type, error_data_type
        return [
            ["1", schema_int_type, int_type],
            ['"1"', "string", "STRING_TYPE"],
            ["true", "boolean", "BOOLEAN_TYPE"],
            ['array("1","2","3")', "array<string>", "ARRAY_TYPE"],
            ["array(1,2,3)", "array<int>", "ARRAY_TYPE"],
            ["cast('2019-01-01' as date)", "date", "DATE_TYPE"],
            ["cast('2019-01-01' as timestamp)", "timestamp", "TIMESTAMP_TYPE"],
            ["cast(1.0 AS DECIMAL(4, 2))", "decimal", "DECIMAL_TYPE"],
        ]


@pytest.mark.extra
class TestTableContract(ThriftContractTypes, BaseTableConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "my_model_wrong_order.sql": constraints.my_model_wrong_order_sql,
            "my_model_wrong_name.sql": constraints.my_model_wrong_name_sql,
            "constraints_schema.yml": CONTRACT_YML,
        }


@pytest.mark.extra
class TestViewContract(ThriftContractTypes, BaseViewConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "my_model_wrong_order.sql": constraints.my_model_view_wrong_order_sql,
            "my_model_wrong_name.sql": constraints.my_model_view_wrong_name_sql,
            "constraints_schema.yml": CONTRACT_YML,
        }


@pytest.mark.extra
class TestIncrementalContract(ThriftContractTypes, BaseIncrementalConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "my_model_wrong_order.sql": constraints.my_model_incremental_wrong_order_sql,
            "my_model_wrong_name.sql": constraints.my_model_incremental_wrong_name_sql,
            "constraints_schema.yml": CONTRACT_YML,
        }


# -- relation comments (extra) ----------------------------------------------------------------

TRICKY = """ description "with double quotes"
and with 'single  quotes' as well as other;
'''abc123'''
reserved -- characters
/* comment */
Some $lbl$ labeled $lbl$ and $$ unlabeled $$ dollar-quoting
"""


def description(what: str, indent: int) -> str:
    return "description: |\n" + textwrap.indent(what + TRICKY, " " * indent)


DOCS_YML = f"""
version: 2
models:
  - name: table_model
    {description("Table model", 6)}
  - name: incremental_model
    {description("Incremental model", 6)}
  - name: view_model
    {description("View model", 6)}
    columns:
      - name: id
        {description("id Column", 10)}
seeds:
  - name: seed
    {description("Seed model", 6)}
"""


@pytest.mark.extra
class TestPersistRelationDocs:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "table_model.sql": "{{ config(materialized='table') }} select 1 as id, 'Joe' as name",
            "incremental_model.sql": (
                "{{ config(materialized='incremental') }} select 1 as id, 'Joe' as name"
            ),
            "view_model.sql": (
                "{{ config(materialized='view') }} "
                "select id, count(*) as count from {{ ref('table_model') }} group by id"
            ),
            "schema.yml": DOCS_YML,
        }

    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"seed.csv": "id,name\n1,Alice\n2,Bob\n"}

    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        docs = {"+persist_docs": {"relation": True, "columns": True}}
        return {"models": {"test": docs}, "seeds": {"test": docs}}

    def test_relation_comments(self, project: Any) -> None:
        run_dbt(["seed"])
        run_dbt(["run"])
        for table, what in [
            ("table_model", "Table"),
            ("incremental_model", "Incremental"),
            ("view_model", "View"),
            ("seed", "Seed"),
        ]:
            rows = project.run_sql(f"describe extended {project.test_schema}.{table}", fetch="all")
            comments = [row[1] for row in rows if row[0] == "Comment"]
            assert comments, f"{table}: no Comment row in {rows}"
            assert comments[0].startswith(f"{what} model description"), (table, comments[0])
            if table == "view_model":
                ids = [row[2] for row in rows if row[0] == "id"]
                assert ids and ids[0].startswith("id Column description"), (table, rows)
