"""The Scrapy peer of the crawl benchmarks, run by the Scrapy venv's Python (it imports only
Scrapy). Settings match ours: robots.txt obeyed, 8 requests in flight per host, no delay,
breadth-first, every `<a>`/`<area>` followed on the seed's host, each page's URL, status and
title written to a JSONL feed (as our `pages` stores a row per page).

    python scrapy_spider.py crawl SEED_URL DEPTH OUT.jsonl
    python scrapy_spider.py list URLS.txt OUT.jsonl
"""

import sys
from urllib.parse import urlsplit

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor


class CrawlSpider(scrapy.Spider):
    """From one seed, every link on the seed's host, breadth-first, to a depth."""

    name = "crawl"

    def __init__(self, seed: str, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [seed]
        self.allowed_domains = [urlsplit(seed).hostname]
        self.links = LinkExtractor(tags=("a", "area"), attrs=("href",))

    def parse(self, response):
        yield {
            "url": response.url,
            "status": response.status,
            "title": response.css("title::text").get(),
        }
        for link in self.links.extract_links(response):
            yield response.follow(link.url, callback=self.parse)


class ListSpider(scrapy.Spider):
    """Every URL of a file, once; no link followed."""

    name = "list"

    def __init__(self, path: str, **kwargs):
        super().__init__(**kwargs)
        with open(path) as urls:
            self.start_urls = [line.strip() for line in urls if line.strip()]

    def parse(self, response):
        yield {"url": response.url, "status": response.status, "size": len(response.body)}


# Every Scrapy peer's settings (`scrapy_extract_spider.py` takes them too): robots.txt obeyed,
# 8 requests in flight per host, no delay.
SETTINGS = {
    "ROBOTSTXT_OBEY": True,
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    "DOWNLOAD_DELAY": 0,
    "LOG_LEVEL": "WARNING",
    "TELNETCONSOLE_ENABLED": False,
    "HTTPERROR_ALLOW_ALL": True,
}


def main(argv: list[str]) -> int:
    mode, *rest = argv
    settings = {
        **SETTINGS,
        # Breadth-first, as Scrapy's docs set it.
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    }
    if mode == "crawl":
        seed, depth, out = rest
        settings["DEPTH_LIMIT"] = int(depth)
        settings["FEEDS"] = {out: {"format": "jsonlines"}}
        process = CrawlerProcess(settings)
        process.crawl(CrawlSpider, seed=seed)
    else:
        path, out = rest
        settings["FEEDS"] = {out: {"format": "jsonlines"}}
        process = CrawlerProcess(settings)
        process.crawl(ListSpider, path=path)
    process.start()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
