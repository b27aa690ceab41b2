"""A headless Chromium driven over the DevTools protocol (loopback only), for tests that
interact with the report page: evaluate script, dispatch events, read console errors."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM = shutil.which("chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Any request that leaves the machine fails: the page must need none.
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
]


class Page:
    """One tab: ``evaluate`` runs an expression and returns its value; console errors and
    failed requests are collected in ``errors``."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        self.errors: list[str] = []
        self._next = 0

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        ident = self._next
        await self.socket.send_json({"id": ident, "method": method, "params": params})
        while True:
            message = json.loads((await self.socket.receive()).data)
            self._note(message)
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result") or {})

    def _note(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params") or {}
        if method == "Runtime.exceptionThrown":
            self.errors.append(str(params.get("exceptionDetails")))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(str(params.get("args")))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            self.errors.append(str(params["entry"].get("text")))

    async def evaluate(self, expression: str) -> Any:
        found = await self.call(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in found:
            raise RuntimeError(f"{expression}: {found['exceptionDetails']}")
        return (found.get("result") or {}).get("value")

    async def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = await self.evaluate(expression)
            if value:
                return value
            await asyncio.sleep(0.2)
        raise TimeoutError(expression)


@contextmanager
def chromium(width: int = 1400, height: int = 1000) -> Iterator[int]:
    """A headless Chromium listening for DevTools on a loopback port; yields the port."""
    assert CHROMIUM is not None
    # Chromium's helper processes can still be writing the profile as the browser exits.
    with tempfile.TemporaryDirectory(
        prefix="mmjudge-devtools-", ignore_cleanup_errors=True
    ) as profile:
        process = subprocess.Popen(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            port_file = Path(profile) / "DevToolsActivePort"
            deadline = time.monotonic() + 30
            while not port_file.is_file() or not port_file.read_text().strip():
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("Chromium did not start its DevTools server")
                time.sleep(0.1)
            yield int(port_file.read_text().split()[0])
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def open_page(port: int, url: str, session: aiohttp.ClientSession) -> Page:
    async with session.get(f"http://127.0.0.1:{port}/json/list") as response:
        targets = await response.json()
    page_target = next(t for t in targets if t.get("type") == "page")
    socket = await session.ws_connect(page_target["webSocketDebuggerUrl"], max_msg_size=0)
    page = Page(socket)
    for domain in ("Runtime", "Log", "Page"):
        await page.call(f"{domain}.enable")
    await page.call("Page.navigate", url=url)
    await page.wait_for("document.readyState === 'complete'")
    return page


def run(url: str, script: Any, width: int = 1400) -> Any:
    """Open ``url`` and run ``await script(page)``; returns its result."""

    async def main(port: int) -> Any:
        async with aiohttp.ClientSession() as session:
            page = await open_page(port, url, session)
            try:
                return await script(page)
            finally:
                await page.socket.close()

    with chromium(width) as port:
        return asyncio.run(main(port))


def console_errors(stderr: str) -> list[str]:
    """Console messages in Chromium's log that report a script error."""
    return [
        line
        for line in stderr.splitlines()
        if ":CONSOLE" in line and re.search(r"Uncaught|Error|error", line)
    ]
