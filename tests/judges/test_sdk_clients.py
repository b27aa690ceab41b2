"""The SDK clients a judge builds (:mod:`mmjudge.judges.sdk_clients`)."""

from __future__ import annotations

import asyncio
from importlib import import_module

import pytest

from mmjudge.judges.sdk_clients import ClientSpec

CLIENT_CLASSES = {"openai": "AsyncOpenAI", "anthropic": "AsyncAnthropic"}


def pool_limit(sdk_name: str, connections: int | None) -> int:
    """The limit of the aiohttp connection pool behind a client built with ``connections``."""
    spec = ClientSpec(
        client_class=CLIENT_CLASSES[sdk_name],
        api_key="sk-test",
        base_url="http://127.0.0.1:9",
        timeout_s=5.0,
        use_aiohttp=True,
        connections=connections,
    )
    client, uses_aiohttp = spec.build(import_module(sdk_name))
    assert uses_aiohttp

    async def limit() -> int:
        session = client._client._transport.get_client()
        try:
            return int(session.connector.limit)
        finally:
            await session.close()
            await client.close()

    return asyncio.run(limit())


@pytest.mark.parametrize("sdk_name", sorted(CLIENT_CLASSES))
def test_a_pool_without_a_cap_has_none(sdk_name: str) -> None:
    # aiohttp's own default would hold every judge to 100 calls in flight on the SDK's path
    assert pool_limit(sdk_name, None) == 0  # aiohttp: no limit


@pytest.mark.parametrize("sdk_name", sorted(CLIENT_CLASSES))
def test_a_models_own_limit_caps_the_pool(sdk_name: str) -> None:
    assert pool_limit(sdk_name, 24) == 24
