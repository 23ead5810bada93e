"""One Redis client per address and timeout in each process, made on its first use (a client
keeps its own pool of connections, so a process that forks makes its own after the fork)."""
from __future__ import annotations

import redis

_clients: dict[tuple[str, float], redis.Redis] = {}


def redis_client(url: str, *, timeout: float = 0.5) -> redis.Redis:
    """The process's client of the Redis at `url`, whose calls and connections give up after
    `timeout` seconds."""
    client = _clients.get((url, timeout))
    if client is None:
        client = _clients.setdefault((url, timeout), redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout))
    return client
