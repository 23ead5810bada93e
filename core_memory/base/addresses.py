"""Who the client is, behind load balancers the operator names (`CORE_TRUSTED_PROXIES`).

A proxy appends the address it took the request from to `X-Forwarded-For`; everything to the
left of that was written by whoever sent the request, and can say anything. So the header is
read from the right: the nearest address that is no trusted proxy is the client. From a
connection that is no trusted proxy the header is not read at all. Rate limits and the
console's login throttle count by this address (core_memory.base.api.throttling).
"""
from __future__ import annotations

import ipaddress

from django.conf import settings

FORWARDED_FOR = "HTTP_X_FORWARDED_FOR"


def _address(value: str):
    """An address as a proxy writes it: bare, bracketed IPv6 (`[2001:db8::1]:443`) or IPv4 with a port."""
    value = value.strip()
    if value.startswith("["):
        value = value[1:].split("]")[0]
    elif value.count(":") == 1:
        value = value.split(":")[0]
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def _trusted(address) -> bool:
    return address is not None and any(address in network for network in settings.CORE_TRUSTED_PROXIES)


def client_address(meta) -> str:
    """The client's address for a request's META (or a WSGI environ): the connection's peer, or,
    when that is a trusted proxy, the nearest untrusted address its `X-Forwarded-For` names."""
    peer = meta.get("REMOTE_ADDR") or ""
    nearest = _address(peer)
    if not _trusted(nearest):
        return peer or "unknown"
    for hop in reversed([part for part in meta.get(FORWARDED_FOR, "").split(",") if part.strip()]):
        address = _address(hop)
        if address is None:
            break  # written by the client, not by a proxy: the last proxy's peer is all we know
        nearest = address
        if not _trusted(address):
            break
    return str(nearest)
