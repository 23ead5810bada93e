"""Who the client is behind the operator's load balancers (core_memory.base.addresses, issue 28)."""
import ipaddress

import pytest

from core_memory.base.addresses import client_address

BALANCER = "10.0.0.5"


@pytest.fixture(autouse=True)
def trusted(settings):
    settings.CORE_TRUSTED_PROXIES = (ipaddress.ip_network("10.0.0.0/24"), ipaddress.ip_network("2001:db8::/32"))


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        pytest.param("198.51.100.4", "", "198.51.100.4", id="no-proxy"),
        pytest.param("198.51.100.4", "203.0.113.9", "198.51.100.4", id="an-untrusted-peer-cannot-say-who-it-is"),
        pytest.param(BALANCER, "203.0.113.9", "203.0.113.9", id="behind-the-balancer"),
        pytest.param(BALANCER, "1.2.3.4, 203.0.113.9", "203.0.113.9", id="what-the-client-wrote-on-the-left-is-not-read"),
        pytest.param(BALANCER, "203.0.113.9, 10.0.0.7", "203.0.113.9", id="two-trusted-proxies"),
        pytest.param(BALANCER, "203.0.113.9, 2001:db8::1", "203.0.113.9", id="a-trusted-ipv6-proxy"),
        pytest.param(BALANCER, "10.0.0.8", "10.0.0.8", id="only-trusted-hops"),
        pytest.param(BALANCER, "not-an-address", BALANCER, id="a-written-header-ends-the-walk"),
        pytest.param(BALANCER, "", BALANCER, id="a-balancer-that-sends-no-header"),
        pytest.param(BALANCER, "[2001:db9::5]:443", "2001:db9::5", id="a-bracketed-ipv6-client-with-its-port"),
        pytest.param(BALANCER, "203.0.113.9:50412", "203.0.113.9", id="an-ipv4-client-with-its-port"),
    ],
)
def test_the_client_is_the_nearest_address_no_trusted_proxy_wrote(peer, forwarded, client):
    meta = {"REMOTE_ADDR": peer, **({"HTTP_X_FORWARDED_FOR": forwarded} if forwarded else {})}

    assert client_address(meta) == client


def test_without_trusted_proxies_the_header_is_never_read(settings):
    settings.CORE_TRUSTED_PROXIES = ()

    assert client_address({"REMOTE_ADDR": BALANCER, "HTTP_X_FORWARDED_FOR": "203.0.113.9"}) == BALANCER
