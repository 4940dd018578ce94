"""The redactor masks credentials only where they are credentials: a URL's userinfo and the
secret query keys, never an `@` in a path or query."""

import pytest

from scrapeflow_dagster.engine.redact import redact, redact_params

KEPT = [
    "https://mail.python.org/archives/list/python-dev@python.org/message/X/",
    "https://www.npmjs.com/package/@types/node",
    "https://mastodon.social/@user/109",
    "https://x.test/search?q=a@b.c&page=2",
    "https://x.test/a?to=someone%40example.com",
    "http://host.test:8080/path/@x",
    "http://[::1]:8080/@x",
    "https://x.test/p#@frag",
    "mailto:dev@python.org",
    "see https://x.test/@me and https://y.test/list/a@b/",
]

MASKED = [
    ("https://alice:hunter2@x.test/a", "https://***@x.test/a"),
    ("https://token@github.com/org/repo.git", "https://***@github.com/org/repo.git"),
    ("https://user:p%40ss@host.test/a@b", "https://***@host.test/a@b"),
    ("http://alice@[::1]:8080/x", "http://***@[::1]:8080/x"),
    # A password holding an unescaped `/` (seen in proxy settings): up to the last `@`.
    ("InvalidURL: http://u:s3c/r3t-pw@127.0.0.1:1080 x", "InvalidURL: http://***@127.0.0.1:1080 x"),
    ("proxy 'http://a:b@10.0.0.1:8080' failed", "proxy 'http://***@10.0.0.1:8080' failed"),
    ("https://x.test/?api_key=SECRET&q=1", "https://x.test/?api_key=***&q=1"),
    ("https://x.test/?token=abc", "https://x.test/?token=***"),
]


@pytest.mark.parametrize("text", KEPT)
def test_an_at_sign_outside_the_userinfo_is_kept(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(("text", "shown"), MASKED)
def test_credentials_are_masked(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_task_params_keep_urls_with_at_signs_and_lose_credentials() -> None:
    params = {
        "url": "https://www.npmjs.com/package/@types/node",
        "headers": {"Authorization": "Bearer x"},
        "referer": "https://bob:pw@x.test/@me",
    }
    assert redact_params(params) == {
        "url": "https://www.npmjs.com/package/@types/node",
        "headers": {"Authorization": "***"},
        "referer": "https://***@x.test/@me",
    }
