"""What the Connect door reads in a client's plan before forwarding it: the SQL text or a
readable summary (what a query's record shows), whether it runs the client's code on the
engine, whether it starts a streaming query, and whether Spark only analyses it there (SQL
text that is a query). Read from pyspark's own messages."""

from __future__ import annotations

from google.protobuf.message import Message
from pyspark.sql.connect.proto import base_pb2, commands_pb2, relations_pb2

from sparkgate.errors import InvalidRequest
from sparkgate.service.connect import Operation
from sparkgate.sql.errors import SqlSyntaxError
from sparkgate.sql.lexer import Kind, lex

# Messages that carry code for the engine to run, and how an error names them.
CODE_MESSAGES = {
    "PythonUDF": "a Python UDF",
    "PythonUDTF": "a Python UDTF",
    "PythonDataSource": "a Python data source",
    "ScalarScalaUDF": "a Scala UDF",
    "JavaUDF": "a Java UDF",
    "StreamingForeachFunction": "a foreach function",
}
# Commands that start streaming work, which sparkgate does not supervise through Connect yet.
STREAMING_COMMANDS = {"write_stream_operation_start", "pipeline_command"}
# Commands that run something other than Spark SQL on the engine's behalf.
CODE_COMMANDS = {"execute_external_command": "an external command"}
_SUMMARY_MAX = 2000
# The first words of SQL text that is a query (Spark's grammar: a query, a CTE, inline rows,
# ``TABLE t``, ``FROM t SELECT``/``|>`` and Hive's ``MAP``/``REDUCE``). Anything else may be
# a command, which Spark runs at once.
_QUERY_STARTS = ("SELECT", "WITH", "VALUES", "TABLE", "FROM", "MAP", "REDUCE")
# What makes a WITH or FROM statement a command: ``WITH c AS (...) INSERT ...``,
# ``FROM t INSERT INTO ...``.
_DML = ("INSERT", "DELETE", "UPDATE", "MERGE")


def read_plan(plan: base_pb2.Plan) -> Operation:
    """The operation a plan asks for (a compressed plan is read uncompressed)."""
    op = plan.WhichOneof("op_type")
    if op == "compressed_operation":
        root: Message = _decompress(plan.compressed_operation)
    elif op == "root":
        root = plan.root
    elif op == "command":
        root = plan.command
    else:
        raise InvalidRequest("The plan is empty: it has neither a relation nor a command.")
    code = _code_in(root)
    if isinstance(root, commands_pb2.Command):
        command = root.WhichOneof("command_type") or "unknown"
        code = code or CODE_COMMANDS.get(command)
        if command == "sql_command":
            text = _command_sql(root.sql_command)
            return Operation(_clip(text), sql=text, code=code, analysed_only=is_query(text))
        return Operation(
            _clip(f"{command}: {_describe_command(root)}"),
            code=code,
            streaming=command in STREAMING_COMMANDS,
        )
    assert isinstance(root, relations_pb2.Relation)
    query = _sql_of(root)
    if query is not None:
        return Operation(_clip(query), sql=query, code=code)
    return Operation(_clip(describe(root)), code=code)


def is_query(text: str) -> bool:
    """Whether SQL text is a query, which ``spark.sql`` only has Spark analyse (Spark hands
    the query back for the DataFrame to run it), rather than a command, which Spark runs at
    once. Only what is surely a query: text that cannot be read is not."""
    try:
        lexemes = lex(text)
    except SqlSyntaxError:
        return False
    first = next((x for x in lexemes if not (x.kind is Kind.PUNCT and x.value == "(")), None)
    if first is None or not first.is_word(*_QUERY_STARTS):
        return False
    may_write = first.is_word("WITH", "FROM")
    depth = 0
    for number, lexeme in enumerate(lexemes):
        if lexeme.kind is Kind.PUNCT:
            depth += {"(": 1, ")": -1}.get(lexeme.value, 0)
            if lexeme.value == ";" and any(x.value != ";" for x in lexemes[number:]):
                return False  # more than one statement: a script, run at once
        elif may_write and depth == 0 and lexeme.is_word(*_DML):
            return False
    return True


def _decompress(compressed: base_pb2.Plan.CompressedOperation) -> Message:
    if compressed.compression_codec != base_pb2.COMPRESSION_CODEC_ZSTD:
        raise InvalidRequest("The plan is compressed with a codec sparkgate cannot read.")
    import zstandard

    try:
        data = zstandard.ZstdDecompressor().decompress(compressed.data)
    except zstandard.ZstdError as exc:
        raise InvalidRequest(f"The compressed plan cannot be read: {exc}.") from exc
    message: Message
    if compressed.op_type == base_pb2.Plan.CompressedOperation.OP_TYPE_RELATION:
        message = relations_pb2.Relation()
    elif compressed.op_type == base_pb2.Plan.CompressedOperation.OP_TYPE_COMMAND:
        message = commands_pb2.Command()
    else:
        raise InvalidRequest("The compressed plan has no operation type.")
    message.ParseFromString(data)
    return message


def _code_in(message: Message) -> str | None:
    """What in a message runs the client's code, searching every field set in it."""
    found = CODE_MESSAGES.get(message.DESCRIPTOR.name)
    if found is not None:
        return found
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        if descriptor.is_repeated:
            if descriptor.message_type.GetOptions().map_entry:
                values = (
                    list(value.values())
                    if descriptor.message_type.fields_by_name["value"].message_type
                    else []
                )
            else:
                values = list(value)
            for item in values:
                found = _code_in(item)
                if found is not None:
                    return found
        else:
            found = _code_in(value)
            if found is not None:
                return found
    return None


def _command_sql(command: commands_pb2.SqlCommand) -> str:
    text = _sql_of(command.input) if command.HasField("input") else None
    return command.sql if text is None else text


def _sql_of(relation: relations_pb2.Relation) -> str | None:
    """The SQL text of a relation that is SQL text: ``spark.sql(...)``, also with DataFrames
    as arguments (``spark.sql("SELECT * FROM {df}", df=df)``: SQL with references)."""
    kind = relation.WhichOneof("rel_type")
    if kind == "sql":
        return relation.sql.query
    if kind == "with_relations" and relation.with_relations.root.WhichOneof("rel_type") == "sql":
        return relation.with_relations.root.sql.query
    return None


def _describe_command(command: commands_pb2.Command) -> str:
    kind = command.WhichOneof("command_type")
    inner = getattr(command, kind) if kind else None
    if inner is not None:
        for name in ("input", "query"):
            if inner.DESCRIPTOR.fields_by_name.get(name) is not None and inner.HasField(name):
                child = getattr(inner, name)
                if isinstance(child, relations_pb2.Relation):
                    return describe(child)
    return ""


def describe(relation: relations_pb2.Relation) -> str:
    """A readable one-line summary of a DataFrame plan: its steps from the last to the
    sources, e.g. ``aggregate <- filter <- read sales``."""
    kind: str = relation.WhichOneof("rel_type") or "unknown"
    step = getattr(relation, kind) if kind != "unknown" else None
    label: str = kind
    if kind == "read" and step is not None:
        which = step.WhichOneof("read_type")
        if which == "named_table":
            label = f"read {step.named_table.unparsed_identifier}"
        elif which == "data_source":
            paths = ", ".join(step.data_source.paths)
            label = f"read {step.data_source.format or 'files'} {paths}".rstrip()
    elif kind == "range" and step is not None:
        label = f"range({step.start}, {step.end})"
    elif kind == "sql" and step is not None:
        label = f"sql {step.query!r}"
    children = []
    if step is not None:
        for name in ("input", "left", "right", "root"):
            field = step.DESCRIPTOR.fields_by_name.get(name)
            if field is not None and field.message_type is not None and step.HasField(name):
                child = getattr(step, name)
                if isinstance(child, relations_pb2.Relation):
                    children.append(describe(child))
    if not children:
        return label
    if len(children) == 1:
        return f"{label} <- {children[0]}"
    return f"{label} <- ({', '.join(children)})"


def _clip(text: str) -> str:
    return text if len(text) <= _SUMMARY_MAX else text[: _SUMMARY_MAX - 1] + "…"
