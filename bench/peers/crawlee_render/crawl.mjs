// The Crawlee peer of the rendering benchmark (bench/bench_render_peer.py), run by Node from the
// folder the benchmark installed this package into (outside the repo).
//
//     node crawl.mjs URLS.txt OUT.jsonl [STATS.json]
//
// A PlaywrightCrawler renders every URL of URLS.txt once (no link followed) in the system's
// Chromium (/usr/bin/chromium, headless; Crawlee and Playwright download no browser), at most 4
// pages at once (our default `pages_at_once`); Crawlee's autoscaling is left as it ships
// (it starts at 1 and grows as its system status allows). Images, fonts and media are blocked
// before each navigation (Crawlee's `blockRequests`, by URL pattern); each page waits for its
// script's `<h1>`, then writes one JSON line {url, h1, links} to OUT.jsonl (a request that
// failed after Crawlee's retries writes {url, h1: null, links: 0, error}). Storage is kept in
// memory (`persistStorage: false`). STATS.json, when given: the seconds `crawler.run()` took
// (browser start and teardown included), Crawlee's final statistics and the concurrency seen.

import { createWriteStream, readFileSync, writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

import { Configuration, PlaywrightCrawler, playwrightUtils } from "crawlee";

const [urlsPath, outPath, statsPath] = process.argv.slice(2);
if (!urlsPath || !outPath) {
  console.error("usage: node crawl.mjs URLS.txt OUT.jsonl [STATS.json]");
  process.exit(2);
}

const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const PAGES_AT_ONCE = 4;
// What our engine refuses by resource type (image, font, media), as URL patterns.
const BLOCKED = [
  ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".avif", ".ico", ".bmp",
  ".woff", ".woff2", ".ttf", ".otf", ".eot",
  ".mp4", ".webm", ".ogg", ".mp3", ".wav", ".m4a",
];

const urls = readFileSync(urlsPath, "utf8")
  .split("\n")
  .map((line) => line.trim())
  .filter(Boolean);
const out = createWriteStream(outPath);
const write = (row) => out.write(`${JSON.stringify(row)}\n`);

const config = new Configuration({ persistStorage: false, purgeOnStart: true });

const crawler = new PlaywrightCrawler(
  {
    headless: true,
    // As many pages at once as ours from the start: Crawlee's autoscaling otherwise starts at
    // one page and adds one about every 10 s (measured: 4 reached after 61 s of 124).
    minConcurrency: PAGES_AT_ONCE,
    maxConcurrency: PAGES_AT_ONCE,
    launchContext: {
      launchOptions: { executablePath: CHROMIUM, headless: true },
    },
    preNavigationHooks: [
      async ({ page }) => {
        await playwrightUtils.blockRequests(page, { urlPatterns: BLOCKED });
      },
    ],
    async requestHandler({ request, page }) {
      await page.waitForSelector("h1");
      const h1 = await page.$eval("h1", (el) => el.textContent.trim());
      const links = await page.$$eval("a", (as) => as.length);
      write({ url: request.url, h1, links });
    },
    failedRequestHandler({ request }, error) {
      write({ url: request.url, h1: null, links: 0, error: String(error?.message ?? error) });
    },
  },
  config,
);

// The concurrency Crawlee's autoscaled pool runs at, once a second.
const concurrency = { max_current: 0, max_desired: 0, seconds_to_max: null };
const started = performance.now();
const watch = setInterval(() => {
  const pool = crawler.autoscaledPool;
  if (!pool) return;
  concurrency.max_desired = Math.max(concurrency.max_desired, pool.desiredConcurrency);
  if (pool.currentConcurrency > concurrency.max_current) {
    concurrency.max_current = pool.currentConcurrency;
    concurrency.seconds_to_max = (performance.now() - started) / 1000;
  }
}, 1000);

const stats = await crawler.run(urls);
const seconds = (performance.now() - started) / 1000;
clearInterval(watch);
await new Promise((resolve) => out.end(resolve));
if (statsPath) {
  writeFileSync(
    statsPath,
    JSON.stringify({ seconds, urls: urls.length, concurrency, crawlee: stats }, null, 2),
  );
}
process.exit(0);
