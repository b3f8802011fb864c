"""dbt's cross-database macro tests (dbt.tests.adapter.utils) and data type macros, as dbt-spark
runs them for its ``apache_spark`` profile.

Included as in dbt-spark: any_value, array_append/concat/construct, bool_or, cast,
cast_bool_to_text, concat, current_timestamp (naive), date, dateadd, date_trunc, equals,
escape_single_quotes (backslash), except, hash, intersect, last_day, length, listagg (without
ORDER BY, which Spark's collect_list cannot honour), position, replace, right, safe_cast,
split_part, string_literal; the type macros bigint, float, int, numeric, string, timestamp; and
current_timestamp's column types.
Overrides as in dbt-spark: split_part and last_day seeds without the empty-string / NULL rows
(Hive reads an empty CSV field as NULL, not ''), and the listagg model.
Skipped as in dbt-spark for apache_spark: datediff ("generates too much SQL": its view text
exceeds the Derby metastore's limit, on either server).
"""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.adapter.utils import fixture_listagg
from dbt.tests.adapter.utils.data_types.test_type_bigint import BaseTypeBigInt
from dbt.tests.adapter.utils.data_types.test_type_float import BaseTypeFloat
from dbt.tests.adapter.utils.data_types.test_type_int import BaseTypeInt
from dbt.tests.adapter.utils.data_types.test_type_numeric import BaseTypeNumeric
from dbt.tests.adapter.utils.data_types.test_type_string import BaseTypeString
from dbt.tests.adapter.utils.data_types.test_type_timestamp import BaseTypeTimestamp
from dbt.tests.adapter.utils.test_any_value import BaseAnyValue
from dbt.tests.adapter.utils.test_array_append import BaseArrayAppend
from dbt.tests.adapter.utils.test_array_concat import BaseArrayConcat
from dbt.tests.adapter.utils.test_array_construct import BaseArrayConstruct
from dbt.tests.adapter.utils.test_bool_or import BaseBoolOr
from dbt.tests.adapter.utils.test_cast import BaseCast
from dbt.tests.adapter.utils.test_cast_bool_to_text import BaseCastBoolToText
from dbt.tests.adapter.utils.test_concat import BaseConcat
from dbt.tests.adapter.utils.test_current_timestamp import BaseCurrentTimestampNaive
from dbt.tests.adapter.utils.test_date import BaseDate
from dbt.tests.adapter.utils.test_date_trunc import BaseDateTrunc
from dbt.tests.adapter.utils.test_dateadd import BaseDateAdd
from dbt.tests.adapter.utils.test_datediff import BaseDateDiff
from dbt.tests.adapter.utils.test_equals import BaseEquals
from dbt.tests.adapter.utils.test_escape_single_quotes import BaseEscapeSingleQuotesBackslash
from dbt.tests.adapter.utils.test_except import BaseExcept
from dbt.tests.adapter.utils.test_hash import BaseHash
from dbt.tests.adapter.utils.test_intersect import BaseIntersect
from dbt.tests.adapter.utils.test_last_day import BaseLastDay
from dbt.tests.adapter.utils.test_length import BaseLength
from dbt.tests.adapter.utils.test_listagg import BaseListagg
from dbt.tests.adapter.utils.test_position import BasePosition
from dbt.tests.adapter.utils.test_replace import BaseReplace
from dbt.tests.adapter.utils.test_right import BaseRight
from dbt.tests.adapter.utils.test_safe_cast import BaseSafeCast
from dbt.tests.adapter.utils.test_split_part import BaseSplitPart
from dbt.tests.adapter.utils.test_string_literal import BaseStringLiteral
from dbt.tests.adapter.utils.test_timestamps import BaseCurrentTimestamps


class TestAnyValue(BaseAnyValue):
    pass


class TestArrayAppend(BaseArrayAppend):
    pass


class TestArrayConcat(BaseArrayConcat):
    pass


class TestArrayConstruct(BaseArrayConstruct):
    pass


class TestBoolOr(BaseBoolOr):
    pass


class TestCast(BaseCast):
    pass


class TestCastBoolToText(BaseCastBoolToText):
    pass


class TestConcat(BaseConcat):
    pass


class TestCurrentTimestamp(BaseCurrentTimestampNaive):
    pass


class TestDate(BaseDate):
    pass


class TestDateAdd(BaseDateAdd):
    pass


# dbt-spark skips it for apache_spark ("generates too much SQL"). Run here, it fails the same
# way on both servers: the model's view text is longer than the Derby metastore's 32,700-char
# column (INSERT INTO TBLS ... VIEW_EXPANDED_TEXT fails).
@pytest.mark.skip(reason="view text too long for the Derby metastore (as dbt-spark skips it)")
class TestDateDiff(BaseDateDiff):
    pass


class TestDateTrunc(BaseDateTrunc):
    pass


class TestEquals(BaseEquals):
    pass


class TestEscapeSingleQuotes(BaseEscapeSingleQuotesBackslash):
    pass


class TestExcept(BaseExcept):
    pass


class TestHash(BaseHash):
    pass


class TestIntersect(BaseIntersect):
    pass


LAST_DAY_CSV = """date_day,date_part,result
2018-01-02,month,2018-01-31
2018-01-02,quarter,2018-03-31
2018-01-02,year,2018-12-31
"""


class TestLastDay(BaseLastDay):
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"data_last_day.csv": LAST_DAY_CSV}


class TestLength(BaseLength):
    pass


# Spark's listagg (collect_list + array_join) takes no ORDER BY: only the unordered cases.
LISTAGG_UNORDERED_SQL = """
with data as (select * from {{ ref('data_listagg') }}),
data_output as (select * from {{ ref('data_listagg_output') }}),
calculate as (
    select group_col, {{ listagg('string_text', "', '") }} as actual,
        'comma_whitespace_unordered' as version
    from data where group_col = 3 group by group_col
    union all
    select group_col, {{ listagg('DISTINCT string_text', "','") }} as actual,
        'distinct_comma' as version
    from data where group_col = 3 group by group_col
    union all
    select group_col, {{ listagg('string_text') }} as actual, 'no_params' as version
    from data where group_col = 3 group by group_col
)
select calculate.actual, data_output.expected
from calculate
left join data_output
on calculate.group_col = data_output.group_col and calculate.version = data_output.version
"""


class TestListagg(BaseListagg):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "test_listagg.yml": fixture_listagg.models__test_listagg_yml,
            "test_listagg.sql": self.interpolate_macro_namespace(LISTAGG_UNORDERED_SQL, "listagg"),
        }


class TestPosition(BasePosition):
    pass


class TestReplace(BaseReplace):
    pass


class TestRight(BaseRight):
    pass


class TestSafeCast(BaseSafeCast):
    pass


SPLIT_PART_CSV = """parts,split_on,result_1,result_2,result_3,result_4
a|b|c,|,a,b,c,c
1|2|3,|,1,2,3,3
EMPTY|EMPTY|EMPTY,|,EMPTY,EMPTY,EMPTY,EMPTY
"""


class TestSplitPart(BaseSplitPart):
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {"data_split_part.csv": SPLIT_PART_CSV}


class TestStringLiteral(BaseStringLiteral):
    pass


class TestTypeBigInt(BaseTypeBigInt):
    pass


def seed_column_types(**types: str) -> dict[str, Any]:
    """dbt infers bigint and double for the expected seed; Spark's int and float macros are
    narrower, so the seed is typed as the macro under test (dbt-spark's seeds override)."""
    return {"seeds": {"test": {"expected": {"+column_types": types}}}}


class TestTypeFloat(BaseTypeFloat):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return seed_column_types(float_col="float")


class TestTypeInt(BaseTypeInt):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return seed_column_types(int_col="int")


class TestTypeNumeric(BaseTypeNumeric):
    pass


class TestTypeString(BaseTypeString):
    pass


class TestTypeTimestamp(BaseTypeTimestamp):
    pass


class TestCurrentTimestamps(BaseCurrentTimestamps):
    @pytest.fixture(scope="class")
    def expected_sql(self) -> None:
        return None  # the compiled SQL is dbt-spark's business, not the server's

    @pytest.fixture(scope="class")
    def expected_schema(self) -> dict[str, str]:
        return {
            "current_timestamp": "timestamp",
            "current_timestamp_in_utc_backcompat": "timestamp",
            "current_timestamp_backcompat": "timestamp",
        }
