"""The Spark Connect door's listener: gRPC over HTTP/2 on ``SPARKGATE_CONNECT_PORT``, with
TLS when the server has a certificate (clients send ``use_ssl=true``)."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

import grpc

from sparkgate.connect.door import ConnectDoor
from sparkgate.enginelink import CHANNEL_OPTIONS
from sparkgate.settings import Settings

log = logging.getLogger("sparkgate.connect")

# Threads serving calls at once: a running operation holds one while it streams its result.
WORKERS = 64

# Keepalive pings as Spark's own Connect server lets them in (permitKeepAliveTime 10 s, also
# with no call in flight): PySpark's client pings every 60 s, idle or not (SPARK-58094), and
# gRPC's defaults (5 min, none while idle) sent it away with GOAWAY "too_many_pings" after a
# few idle minutes. Half Spark's interval, so that a client pinging at exactly 10 s is not
# struck for a timer firing early.
KEEPALIVE_OPTIONS = [
    ("grpc.keepalive_permit_without_calls", 1),
    # GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS: the server's minimum, whatever
    # the key's name suggests.
    ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
]


class ConnectListener:
    def __init__(self, door: ConnectDoor, settings: Settings) -> None:
        self.door = door
        self.settings = settings
        self.port: int | None = None
        self._server: grpc.Server | None = None

    def start(self) -> None:
        settings = self.settings
        server = grpc.server(
            ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="connect"),
            handlers=[self.door.handler()],
            # Without this a second server on the same port is let in beside the first.
            options=[*CHANNEL_OPTIONS, *KEEPALIVE_OPTIONS, ("grpc.so_reuseport", 0)],
            maximum_concurrent_rpcs=WORKERS * 4,
        )
        address = f"{settings.host}:{settings.connect_port}"
        try:
            if settings.ssl_certfile is not None and settings.ssl_keyfile is not None:
                credentials = grpc.ssl_server_credentials(
                    [
                        (
                            settings.ssl_keyfile.expanduser().read_bytes(),
                            settings.ssl_certfile.expanduser().read_bytes(),
                        )
                    ]
                )
                port = server.add_secure_port(address, credentials)
            else:
                port = server.add_insecure_port(address)
        except RuntimeError as exc:
            raise OSError(str(exc)) from exc
        if not port:
            raise OSError(f"the address {address} cannot be bound")
        server.start()
        self._server, self.port = server, port
        tls = "TLS" if settings.ssl_certfile is not None else "plain text"
        log.info("Spark Connect door listening on %s:%s (%s)", settings.host, port, tls)

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=2).wait()
            self._server = None
