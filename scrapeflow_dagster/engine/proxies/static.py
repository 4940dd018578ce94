"""Providers of proxies the caller lists: a plain list, or lists by country."""

from typing import Unpack

from yarl import URL

from scrapeflow_dagster.engine.proxies.provider import ProxyProvider, ProxyProviderOptions

PROXY_SCHEMES = ("http", "https")  # what aiohttp can tunnel through


def qualified_proxy(proxy: object, where: str) -> str:
    """`proxy` as a full URL (`ip:port` is taken as `http://ip:port`), checked once here rather
    than failing every task that would use it.

    Args:
        proxy: a proxy URL as configured.
        where: how the configuration names it (`proxy_urls[2]`), for the error.

    Raises:
        ValueError: naming `where` and the proxy without its credentials: not a string, no
            host, a port that is not a number, or a scheme aiohttp cannot use (`socks5`).
    """
    if not isinstance(proxy, str) or not proxy.strip():
        raise ValueError(f"{where} must be a proxy URL like http://host:port, got {proxy!r}")
    text = proxy.strip()
    text = text if "://" in text else f"http://{text}"
    scheme, _, rest = text.partition("://")
    shown = f"{scheme}://{rest.rpartition('@')[2]}"  # never the user or password
    try:
        url = URL(text)
        url.port  # noqa: B018  (yarl checks the port when it is read)
    except ValueError as exc:
        detail = str(exc).replace(text, shown)
        raise ValueError(f"{where} ({shown}) is not a valid proxy URL: {detail}") from None
    if url.scheme not in PROXY_SCHEMES:
        raise ValueError(
            f"{where} ({shown}): only {' and '.join(PROXY_SCHEMES)} proxies are supported"
        )
    if not url.host:
        raise ValueError(f"{where} ({shown}) has no host")
    return text


class ProxyProviderFromList(ProxyProvider):
    """Proxies given as a list, without countries (they live under `""`)."""

    def __init__(self, proxies: list[str], **options: Unpack[ProxyProviderOptions]) -> None:
        """Create a pool from `proxies`.

        Args:
            proxies: proxy URLs; `ip:port` without a scheme is taken as `http://ip:port`.
            **options: see `ProxyProvider.__init__`.

        Raises:
            ValueError: naming the first proxy that is not a usable proxy URL.
        """
        super().__init__(**options)
        self.proxies = {
            "": [qualified_proxy(proxy, f"proxy_urls[{n}]") for n, proxy in enumerate(proxies)]
        }


class ProxyProviderFromDict(ProxyProvider):
    """Proxies given by country; `"*"` holds the ones to use when no country is asked."""

    def __init__(
        self, proxies: dict[str, list[str]], **options: Unpack[ProxyProviderOptions]
    ) -> None:
        """Create a pool from `proxies`.

        Args:
            proxies: country -> proxy URLs; `ip:port` without a scheme is taken as `http://`.
            **options: see `ProxyProvider.__init__`.

        Raises:
            ValueError: naming the first proxy that is not a usable proxy URL.
        """
        super().__init__(**options)
        self.proxies = {
            country: [
                qualified_proxy(proxy, f"proxies_by_country[{country!r}][{n}]")
                for n, proxy in enumerate(pool)
            ]
            for country, pool in proxies.items()
        }
