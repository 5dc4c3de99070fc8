"""``edge-rag serve``: an OpenAI-compatible HTTP API and a chat page over one index.

Needs the ``serve`` extra (Starlette, uvicorn, python-multipart), imported only when the server
starts: ``import edge_rag`` stays light.

Design: docs/design/serve.md
"""

from __future__ import annotations

import json
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MissingExtra

INSTALL = "pip install 'edge-rag[serve]'"
GRACE_SECONDS = 3  # seconds uvicorn gives open connections at shutdown (serve.md)


@dataclass
class ServeOptions:
    """What ``edge-rag serve`` was asked for."""

    index: Path
    profile: str | None = None
    host: str = "127.0.0.1"
    port: int = 8765
    token_file: Path | None = None
    queue: int = 4
    timeout: float = 120.0
    cors_origins: list[str] = field(default_factory=list)
    json: bool = False
    key: bytes | None = field(default=None, repr=False)
    allow_hosts: list[str] = field(default_factory=list)
    insecure_key_file: bool = False


def serve(options: ServeOptions) -> int:
    """Check the address and token, load the models, serve until SIGTERM or Ctrl-C; returns 0 after a
    clean shutdown (in-flight answers stopped, index closed)."""
    uvicorn = require_extra()
    from ..models.pages import share_heap
    from .app import Service
    from .connections import raise_open_files

    token = _checked_token(options)
    share_heap()  # the lanes' and clients' threads share one C heap arena: RSS stays near ask's
    open_files = raise_open_files()
    service = Service.start(options.index, options.profile, options.queue, options.timeout,
                            options.key)
    caught: list[int] = []
    previous = {sig: signal.signal(sig, lambda sig, _frame: caught.append(sig))
                for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        config = _config(uvicorn, service, options, token, open_files)
        server = _server_class(uvicorn)(config, service, options)
        server.run()
    finally:
        service.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0 if server.started else 1


def _checked_token(options: ServeOptions) -> str | None:
    from .security import check_bind, load_token

    token = load_token(options.token_file, options.insecure_key_file)
    check_bind(options.host, token)
    return token


def _config(uvicorn: Any, service: Any, options: ServeOptions, token: str | None, open_files: int) -> Any:
    """uvicorn's configuration: the guarded app, the connection cap and timeouts of the profile."""
    from .connections import protocol, quiet_floods
    from .routes import build_app
    from .security import Rules

    settings = service.rag.settings
    rules = Rules(token, [*options.allow_hosts, options.host], list(options.cors_origins))
    config = uvicorn.Config(build_app(service, rules), host=options.host, port=options.port,
                            log_level="warning", access_log=False, lifespan="off", server_header=False,
                            timeout_graceful_shutdown=GRACE_SECONDS,
                            limit_concurrency=settings.serve_connections,
                            timeout_keep_alive=settings.serve_keep_alive_seconds,
                            http=protocol(settings.serve_header_seconds, settings.serve_connections,
                                          open_files, token))
    quiet_floods()  # after uvicorn configured its loggers
    return config


def require_extra() -> Any:
    """uvicorn (with Starlette and python-multipart present), or MissingExtra."""
    try:
        import python_multipart  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn
    except ImportError as exc:
        raise MissingExtra(f"edge-rag serve needs {exc.name}: {INSTALL}") from None
    return uvicorn


def _server_class(uvicorn: Any) -> Any:
    class Server(uvicorn.Server):
        """uvicorn's server that stops the running answer as soon as a signal asks it to exit and
        says when it is ready."""

        def __init__(self, config: Any, service: Any, options: ServeOptions) -> None:
            super().__init__(config)
            self.service, self.options = service, options

        def handle_exit(self, sig: int, frame: Any) -> None:
            self.service.shutting_down()
            super().handle_exit(sig, frame)

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                sockets = [s for server in self.servers for s in server.sockets]
                port = sockets[0].getsockname()[1] if sockets else self.options.port
                _ready(self.options, self.service, port)

    return Server


def _ready(options: ServeOptions, service: Any, port: int) -> None:
    host = f"[{options.host}]" if ":" in options.host else options.host
    url = f"http://{host}:{port}"
    if options.json:
        print(json.dumps({"url": url, "model": service.model, "api": f"{url}/v1"}), flush=True)
    else:
        print(f"edge-rag serve: {url}/ (chat page), {url}/v1 (OpenAI API), model {service.model}; "
              "Ctrl-C or SIGTERM stops", file=sys.stderr, flush=True)
