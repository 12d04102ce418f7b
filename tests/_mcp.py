"""A real MCP client (the `mcp` SDK's own Client) held open for a test module, over stdio to a real
`canning-prof mcp` subprocess or over HTTP, driven from synchronous tests: the client lives in one
asyncio task of a background thread; `call(name, args)` hands it a request and waits for the reply."""
import asyncio
import json
import os
import sys
import threading
from pathlib import Path

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

import canning_tb

# the canning_tb these tests import: this checkout's src/, or an installed copy (make test-nocc's, with no C parts)
SRC = Path(canning_tb.__file__).resolve().parents[1]


def canning_prof() -> list[str]:
    """The canning-prof console script of this interpreter's environment (else the module), run on this checkout."""
    script = Path(sys.executable).parent / "canning-prof"
    return [str(script)] if script.exists() else [sys.executable, "-m", "canning_tb.cli.main"]


def server_env(cache_dir) -> dict:
    return {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
            "CANNING_CACHE_DIR": str(cache_dir)}


def stdio_params(logdir, cache_dir, *options: str) -> StdioServerParameters:
    """`canning-prof mcp --logdir LOGDIR [OPTIONS]` with $CANNING_CACHE_DIR at cache_dir: the server's default cache."""
    command = canning_prof()
    return StdioServerParameters(command=command[0], args=[*command[1:], "mcp", "--logdir", str(logdir), *options],
                                 env=server_env(cache_dir))


class Session:
    """One client session; `call` returns (is_error, text, structured content)."""

    def __init__(self, server, errlog=None, timeout: float = 120.0):
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._main(server, errlog),),
                                        daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout) or self._failed:
            self._cancel()  # a session that never started must not leave its server process behind
            raise RuntimeError(f"the MCP session did not start: {self._failed!r}")

    async def _main(self, server, errlog):
        self._task = asyncio.current_task()
        self._requests: asyncio.Queue = asyncio.Queue()
        try:
            if errlog is not None and isinstance(server, StdioServerParameters):
                server = stdio_client(server, errlog=errlog)  # the server's stderr into a file the test can show
            async with Client(server, mode="legacy") as client:
                self.client = client
                self._ready.set()
                while (item := await self._requests.get()) is not None:
                    coroutine, future = item
                    try:
                        future.set_result(await coroutine(client))
                    except BaseException as e:  # the test sees the client's own exception
                        future.set_exception(e)
        except BaseException as e:
            self._failed = e
            self._ready.set()

    def run(self, coroutine):
        """coroutine(client) run in the session's task; its result."""
        import concurrent.futures
        future = concurrent.futures.Future()
        self._loop.call_soon_threadsafe(self._requests.put_nowait, (coroutine, future))
        return future.result(self.timeout)

    def call(self, name: str, args: dict | None = None):
        result = self.run(lambda client: client.call_tool(name, args or {}))
        text = result.content[0].text if result.content else ""
        return result.is_error, text, result.structured_content

    def answer(self, name: str, args: dict | None = None) -> dict:
        """A successful call's answer, checked to be the same object as its JSON text."""
        failed, text, answer = self.call(name, args)
        assert not failed, f"{name} {args}: {text}"
        assert json.loads(text) == answer
        return answer

    def _cancel(self) -> None:
        """Cancel the client's task: leaving `async with Client` ends a stdio server (the SDK closes its stdin,
        then terminates and kills it)."""
        task = getattr(self, "_task", None)
        if task is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(task.cancel)
        self._thread.join(30)

    def close(self) -> None:
        """Ask the session to end; cancelled where it has not ended in 30 s (a server that does not answer)."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._requests.put_nowait, None)
            self._thread.join(30)
        if self._thread.is_alive():
            self._cancel()

