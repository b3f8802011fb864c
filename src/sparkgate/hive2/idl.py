"""HiveServer2's Thrift interface, loaded at run time from ``TCLIService.thrift`` by thriftpy2.

``T`` holds the generated structs and enums (``T.TStatus``, ``T.TTypeId.INT_TYPE``, ...) and
the service (``T.TCLIService``). thriftpy2 makes them at import, so they are untyped here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import thriftpy2

T: Any = thriftpy2.load(
    str(Path(__file__).with_name("TCLIService.thrift")), module_name="sparkgate_tcliservice_thrift"
)

# The newest protocol sparkgate speaks; a session speaks the older of this and the client's.
SERVER_PROTOCOL: int = T.TProtocolVersion.HIVE_CLI_SERVICE_PROTOCOL_V10
# From V6 on, result sets are columnar and binary values are binary.
COLUMNAR_FROM: int = T.TProtocolVersion.HIVE_CLI_SERVICE_PROTOCOL_V6
