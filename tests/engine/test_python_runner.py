"""pyspark statements as Livy's REPL runs them, with real (in-process) Spark."""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

import pytest

from sparkgate.engine.python_runner import (
    TABLE_MIMETYPE,
    compose_output,
    parse_cells,
    prepare_namespace,
    run_python,
)
from sparkgate.engine.user_code import (
    Capture,
    OutputBuffer,
    StatementInterrupted,
    capturing,
    interruptible,
)
from sparkgate.runtime.failures import DescribedError

pytestmark = pytest.mark.spark


@pytest.fixture
def namespace(spark: Any) -> dict[str, Any]:
    return prepare_namespace({}, spark.newSession())


def failure(code: str, namespace: dict[str, Any]) -> dict[str, Any]:
    with pytest.raises(DescribedError) as raised:
        run_python(code, namespace)
    return raised.value.recorded.to_json()


def test_namespace_has_spark_sc_and_sqlcontext(namespace: dict[str, Any]) -> None:
    out = run_python("spark.range(3).count(), sc.defaultParallelism > 0", namespace)
    assert out == {"text/plain": "(3, True)"}
    out = run_python("sqlContext.sql('SELECT 41 + 1 AS x').collect()[0].x", namespace)
    assert out == {"text/plain": "42"}


def test_final_expression_is_echoed_and_none_is_not(namespace: dict[str, Any]) -> None:
    assert run_python("x = 40\nx + 2", namespace) == {"text/plain": "42"}
    assert run_python("_ * 2", namespace) == {"text/plain": "84"}  # the REPL's _
    assert run_python("print('hi')", namespace) == {"text/plain": "hi"}  # print returns None
    assert run_python("y = 1", namespace) == {"text/plain": ""}
    # Only the last top-level expression echoes, after what was printed before it.
    assert run_python("'a'\nprint('b')\n'c'", namespace) == {"text/plain": "b\n'c'"}
    assert run_python("", namespace) == {"text/plain": ""}


def test_namespace_persists_across_statements(namespace: dict[str, Any]) -> None:
    run_python("def twice(v):\n    return v * 2\nimport math\ndf = spark.range(4)", namespace)
    assert run_python("twice(math.floor(2.5))", namespace) == {"text/plain": "4"}
    assert run_python("df.count()", namespace) == {"text/plain": "4"}


def test_tojson_rows_are_not_mixed_with_pyspark_warnings(namespace: dict[str, Any]) -> None:
    # What the livy client's download() and sparkmagic's %%sql run: every line must be JSON.
    code = "for row in spark.range(2).selectExpr('id').toJSON().collect():\n    print(row)"
    assert run_python(code, namespace) == {"text/plain": '{"id":0}\n{"id":1}'}


def test_stdout_then_stderr(namespace: dict[str, Any]) -> None:
    code = "import sys\nprint('out 1')\nprint('err', file=sys.stderr)\nprint('out 2')\n"
    assert run_python(code, namespace) == {"text/plain": "out 1\nout 2\nerr"}


def test_error_is_described_like_livy(namespace: dict[str, Any]) -> None:
    error = failure("a = 1\nb = 0\nprint('lost')\na / b", namespace)
    assert error["ename"] == "ZeroDivisionError" and error["evalue"] == "division by zero"
    assert error["code"] == "ZeroDivisionError"
    assert error["traceback"][0] == "Traceback (most recent call last):\n"
    assert error["traceback"][1].startswith('  File "<stdin>", line 4')
    assert error["traceback"][-1] == "ZeroDivisionError: division by zero\n"
    assert not any("python_runner" in line for line in error["traceback"])
    # What ran before the failure stays defined.
    assert run_python("a, b", namespace) == {"text/plain": "(1, 0)"}


def test_spark_error_keeps_its_condition(namespace: dict[str, Any]) -> None:
    error = failure("spark.sql('SELECT * FROM no_such_table')", namespace)
    assert error["ename"] == "AnalysisException"
    assert error["code"] == "TABLE_OR_VIEW_NOT_FOUND"
    assert "no_such_table" in error["evalue"]


def test_a_spark_error_shows_no_plan_in_its_message_value_or_traceback(
    namespace: dict[str, Any],
) -> None:
    # The plan Spark analysed this in: Filter (id#0L > 1), +- Range (0, 3, ...).
    code = "spark.range(3).where('id > 1').selectExpr('nosuch').collect()"
    error = failure(code, namespace)
    assert error["code"] == "UNRESOLVED_COLUMN.WITH_SUGGESTION"
    assert "`nosuch` cannot be resolved" in error["evalue"]
    text = json.dumps(error)
    for sign in ("#0", "+- ", "Filter", "Range (0, 3"):
        assert sign not in text, (sign, error)
    assert error["traceback"][-1].startswith(
        "pyspark.errors.exceptions.captured.AnalysisException: [UNRESOLVED_COLUMN"
    )


def test_syntax_error_has_its_position(namespace: dict[str, Any]) -> None:
    error = failure("x = 1\ny = (", namespace)
    assert error["ename"] == "SyntaxError" and error["line"] == 2
    assert error["traceback"][-1].startswith("SyntaxError:")


def test_system_exit_fails_the_statement_not_the_engine(namespace: dict[str, Any]) -> None:
    error = failure("import sys\nsys.exit(3)", namespace)
    assert error["ename"] == "SystemExit" and error["evalue"] == "3"


def test_json_magic(namespace: dict[str, Any]) -> None:
    out = run_python("d = {'a': [1, 2.5, None], 'b': 'x'}\n%json d", namespace)
    assert out == {"application/json": {"a": [1, 2.5, None], "b": "x"}}
    out = run_python("print('note')\n%json d", namespace)
    assert out == {"application/json": {"a": [1, 2.5, None], "b": "x"}, "text/plain": "note"}
    error = failure("%json missing", namespace)
    assert error["ename"] == "NameError" and "missing" in error["evalue"]
    error = failure("df = spark.range(1)\n%json df", namespace)
    assert error["ename"] == "MagicError" and "JSON" in error["evalue"]


def test_table_magic(namespace: dict[str, Any]) -> None:
    code = (
        'rows = spark.sql("SELECT id, CAST(id AS STRING) AS s, '
        'IF(id = 1, NULL, id * 1.5D) AS d FROM range(3)").collect()\n%table rows'
    )
    table = run_python(code, namespace)[TABLE_MIMETYPE]
    assert table["headers"] == [
        {"name": "id", "type": "INT_TYPE"},
        {"name": "s", "type": "STRING_TYPE"},
        {"name": "d", "type": "DOUBLE_TYPE"},
    ]
    assert table["data"] == [[0, "0", 0.0], [1, "1", None], [2, "2", 3.0]]
    scalars = run_python("v = [[1, 'a'], [2, 'b']]\n%table v", namespace)[TABLE_MIMETYPE]
    assert scalars["headers"] == [
        {"name": "0", "type": "INT_TYPE"},
        {"name": "1", "type": "STRING_TYPE"},
    ]
    error = failure("mixed = [[1], ['x']]\n%table mixed", namespace)
    assert error["evalue"] == "%table: column 0 has values of types INT_TYPE and STRING_TYPE"


def test_unknown_magic(namespace: dict[str, Any]) -> None:
    error = failure("%nope x", namespace)
    assert error["ename"] == "UnknownMagic" and "%nope" in error["evalue"]


def test_matplot_magic_saves_a_png(namespace: dict[str, Any]) -> None:
    code = (
        "class Figure:\n"
        "    def savefig(self, sink, format):\n"
        "        sink.write(b'\\x89PNG fake')\n"
        "class Plt:\n"
        "    def gcf(self):\n"
        "        return Figure()\n"
        "plt = Plt()\n"
        "%matplot plt"
    )
    assert run_python(code, namespace) == {"image/png": "iVBORyBmYWtl"}


def test_compose_output_follows_livy() -> None:
    assert compose_output({}, "", "") == {"text/plain": ""}
    assert compose_output({"application/json": 1}, "", "") == {"application/json": 1}
    assert compose_output({"text/plain": "a"}, "b\n", "c\n\n") == {"text/plain": "ab\nc"}


def test_parse_cells_splits_magics_only_when_needed() -> None:
    assert len(parse_cells("x = '%json'\ny = 2")) == 1
    cells = parse_cells("x = 1\n%json x\ny = 2\n%table y")
    kinds = [type(c).__name__ for c in cells]
    assert kinds == ["PythonCell", "MagicCell", "PythonCell", "MagicCell"]
    with pytest.raises(SyntaxError):
        parse_cells("x = (")


def test_output_is_bounded(namespace: dict[str, Any]) -> None:
    out = run_python("print('x' * 5000)", namespace, output_limit=1000)
    assert out["text/plain"].startswith("x" * 1000)
    assert "4001 more characters were not kept" in out["text/plain"]
    tail = OutputBuffer(10, keep="tail")
    tail.write("0123456789")
    tail.write("abc")
    assert tail.getvalue() == "[... 3 earlier characters were not kept]\n3456789abc"


def test_output_with_nul_is_storable(namespace: dict[str, Any]) -> None:
    assert run_python("print('a\\x00b')", namespace) == {"text/plain": "a\\x00b"}


def test_concurrent_statements_capture_only_their_own_output(spark: Any) -> None:
    """Statements of different sessions run at once on threads of one process."""
    results: dict[int, Any] = {}
    start = threading.Barrier(4)

    def session(n: int) -> None:
        namespace = prepare_namespace({}, spark.newSession())
        start.wait()
        code = (
            "import sys, time\n"
            f"for i in range(50):\n    print('s{n}', i)\n    print('e{n}', file=sys.stderr)\n"
            "    time.sleep(0.001)\n"
            f"spark.range({n}).count()"
        )
        results[n] = run_python(code, namespace)

    threads = [threading.Thread(target=session, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for n in range(4):
        lines = results[n]["text/plain"].split("\n")
        assert lines[:50] == [f"s{n} {i}" for i in range(50)]
        assert lines[50] == str(n)  # the echo is printed to stdout, which comes first
        assert lines[51:] == [f"e{n}"] * 50


def test_output_of_other_threads_is_not_captured(capsys: pytest.CaptureFixture[str]) -> None:
    capture = Capture(1000)
    with capturing(capture):
        print("mine")
        other = threading.Thread(target=print, args=("not mine",))
        other.start()
        other.join()
    assert capture.stdout.getvalue() == "mine\n"
    assert "not mine" in capsys.readouterr().out
    print("after", file=sys.stdout)
    assert capture.stdout.getvalue() == "mine\n"


def test_cancel_interrupts_python_code(namespace: dict[str, Any]) -> None:
    cancelled = threading.Event()
    timer = threading.Timer(0.3, cancelled.set)
    timer.start()
    started = time.monotonic()
    with pytest.raises(StatementInterrupted):
        run_python("n = 0\nwhile True:\n    n += 1", namespace, cancelled=cancelled)
    assert time.monotonic() - started < 10
    assert run_python("n > 0", namespace) == {"text/plain": "True"}  # the session goes on


def test_interrupt_is_never_raised_after_the_block() -> None:
    cancelled = threading.Event()
    with interruptible(cancelled, grace=0.0):
        pass
    cancelled.set()
    time.sleep(1.5)  # a watcher still alive would have raised into this thread by now


def test_spark_stop_in_a_statement_is_ignored(namespace: dict[str, Any]) -> None:
    out = run_python("spark.stop()\nsc.stop()\nspark.range(2).count()", namespace)
    text = out["text/plain"]
    assert text.startswith("2\n")  # stdout (the echo), then stderr (the warnings)
    assert "spark.stop() ignored" in text and "sc.stop() ignored" in text
