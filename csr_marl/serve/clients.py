"""Who a client is: the address its budgets are kept under, and which proxies may say so for it.

    client_key("203.0.113.7")           # '203.0.113.7'
    client_key("2001:db8::1:2")         # '2001:db8::/64': an IPv6 host holds a /64, so one bucket per /64
    client_key("::ffff:203.0.113.7")    # '203.0.113.7': an IPv4 client on a dual-stack socket
    proxies = TrustedProxies("127.0.0.1, 10.0.0.0/8")
    proxies.trusts("10.1.2.3")          # True: its X-Forwarded-For names the client

A client's address is the socket's peer, or -- only when the peer is a trusted proxy -- the address
the proxy forwards (uvicorn reads ``X-Forwarded-For`` from the addresses :class:`TrustedProxies`
lists, and from no one else). Every per-client budget (rate, sessions, connections) is kept under
:func:`client_key` of that address.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

IPV6_PREFIX = 64  # the prefix an IPv6 client is counted by: one host is routinely given a whole /64


@lru_cache(maxsize=65_536)
def client_key(address: str) -> str:
    """The key a client's budgets are kept under: an IPv4 address as is, an IPv6 one as its /64."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address  # a Unix socket's path, "unknown": its own key
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        if not ip.is_loopback:
            return str(ipaddress.IPv6Network((ip, IPV6_PREFIX), strict=False))
    return str(ip)


def is_loopback(address: str) -> bool:
    """Whether ``address`` is this machine (127.0.0.0/8, ::1)."""
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class TrustedProxies:
    """The addresses whose ``X-Forwarded-For`` is believed: a comma list of addresses and networks.

    ``"127.0.0.1"`` (the default: a proxy on the same machine), ``"10.0.0.0/8, 192.0.2.4"``, ``""``
    (nobody: every client is its socket's address), or ``"*"`` (everybody; only behind a proxy that
    every connection must pass, since a direct client could then claim any address).
    """

    def __init__(self, spec: str) -> None:
        self.spec = ",".join(part.strip() for part in spec.split(",") if part.strip())
        self.everyone = self.spec == "*"
        networks = []
        if not self.everyone:
            for part in filter(None, self.spec.split(",")):
                try:
                    networks.append(ipaddress.ip_network(part, strict=False))
                except ValueError:
                    raise ValueError(f"trusted-proxies {part!r}: use IP addresses or networks (10.0.0.0/8), comma-separated, or *") from None
        self.networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = tuple(networks)

    def trusts(self, address: str | None) -> bool:
        """Whether a connection from ``address`` may name its client in ``X-Forwarded-For``."""
        if self.everyone:
            return True
        if not address or not self.networks:
            return False
        return _within(address, self.networks)


@lru_cache(maxsize=65_536)  # asked for every connection: an address is parsed once
def _within(address: str, networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)
