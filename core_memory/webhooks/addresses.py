"""Where a webhook may be sent: never to Core itself, and not into the network Core runs in.

A subscription's address is checked when it is made or changed, and again before every
attempt, after its name is resolved: a name that pointed at a public address yesterday may point
at 127.0.0.1 today. The attempt then connects to the address that was checked, not to whatever
a second look-up would answer.

Loopback, private, link-local, shared and reserved addresses (everything that is not a global
unicast address) are refused unless the operator allows private networks
(`CORE_WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true`, for a receiver inside one's own network). A name
Core answers to (`ALLOWED_HOSTS`) is always refused: Core would be sending requests to itself.
"""
from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from core_memory.base.errors import InvalidRequest

SCHEMES = {"http": 80, "https": 443}
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class AddressRefused(InvalidRequest):
    """The address may not be sent to (why, in the message)."""


@dataclass(frozen=True)
class Destination:
    """A checked address: the URL as given, the name in it, its port, and the IP to connect to."""

    url: str
    scheme: str
    host: str
    port: int
    address: IPAddress


def _parts(url: str) -> tuple[str, str, int]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise AddressRefused("The address is not a URL.", param="url") from None
    if parts.scheme not in SCHEMES or not parts.hostname:
        raise AddressRefused("The address must be an http:// or https:// URL with a host.", param="url")
    if parts.username is not None or parts.password is not None:
        raise AddressRefused("The address may not hold a user name or password; deliveries are signed instead.", param="url")
    return parts.scheme, parts.hostname.rstrip(".").lower(), port or SCHEMES[parts.scheme]


def _is_core_itself(host: str) -> bool:
    """A name or address Core answers to (loopback aside: the private-network rule decides it)."""
    if host in LOOPBACK_NAMES or _is_loopback(host):
        return False
    for allowed in settings.ALLOWED_HOSTS:
        allowed = allowed.lower().strip("[]")
        if allowed == "*":
            continue
        if host == allowed or allowed.startswith(".") and (host == allowed[1:] or host.endswith(allowed)):
            return True
    return False


def _is_loopback(text: str) -> bool:
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


def _is_public(address: IPAddress) -> bool:
    mapped = getattr(address, "ipv4_mapped", None)
    address = mapped or address
    return address.is_global and not address.is_multicast


def _resolved(host: str, port: int) -> list[IPAddress]:
    try:
        answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise AddressRefused(f"The name {host!r} cannot be resolved.", param="url") from None
    # The scope of a link-local IPv6 address ("fe80::1%eth0") is not part of the address.
    addresses = [ipaddress.ip_address(str(answer[4][0]).split("%")[0]) for answer in answers]
    return list(dict.fromkeys(addresses))


def webhook_destination(url: str) -> Destination:
    """The URL checked and resolved (the module's docstring); raises `AddressRefused` (a 400 on
    the `url` field) when it may not be sent to."""
    scheme, host, port = _parts(url)
    if _is_core_itself(host):
        raise AddressRefused("The address points at Core itself.", param="url")
    addresses = _resolved(host, port)
    if not addresses:
        raise AddressRefused(f"The name {host!r} cannot be resolved.", param="url")
    if not settings.CORE_WEBHOOKS_ALLOW_PRIVATE_NETWORKS:
        refused = [address for address in addresses if not _is_public(address)]
        if refused:
            raise AddressRefused(
                f"The address resolves to {refused[0]}, which is not a public address "
                "(loopback, private and link-local networks are refused unless the operator allows them).",
                param="url",
            )
    return Destination(url=url, scheme=scheme, host=host, port=port, address=addresses[0])
