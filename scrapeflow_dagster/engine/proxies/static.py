"""Providers of proxies the caller lists: a plain list, or lists by country."""

from typing import Unpack

from scrapeflow_dagster.engine.proxies.provider import ProxyProvider, ProxyProviderOptions


def _qualify(proxy: str) -> str:
    proxy = proxy.strip()
    return proxy if "://" in proxy else f"http://{proxy}"


class ProxyProviderFromList(ProxyProvider):
    """Proxies given as a list, without countries (they live under `""`)."""

    def __init__(self, proxies: list[str], **options: Unpack[ProxyProviderOptions]) -> None:
        """Create a pool from `proxies`.

        Args:
            proxies: proxy URLs; `ip:port` without a scheme is taken as `http://ip:port`.
            **options: see `ProxyProvider.__init__`.
        """
        super().__init__(**options)
        self.proxies = {"": [_qualify(proxy) for proxy in proxies]}


class ProxyProviderFromDict(ProxyProvider):
    """Proxies given by country; `"*"` holds the ones to use when no country is asked."""

    def __init__(
        self, proxies: dict[str, list[str]], **options: Unpack[ProxyProviderOptions]
    ) -> None:
        """Create a pool from `proxies`.

        Args:
            proxies: country -> proxy URLs; `ip:port` without a scheme is taken as `http://`.
            **options: see `ProxyProvider.__init__`.
        """
        super().__init__(**options)
        self.proxies = {
            country: [_qualify(proxy) for proxy in pool] for country, pool in proxies.items()
        }
