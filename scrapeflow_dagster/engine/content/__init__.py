"""What a page says: its main content (menus, footers, banners and related links left out) as
text and as Markdown, with its metadata (`main_content`, by trafilatura: the `content` extra).

Modules:
    main_content: `main_content` and `MainContent`, the one entry point.
    links: links and images resolved against the document's base URL, as a browser does.
    metadata: what the page states of itself in its `<head>` (language, canonical URL, dates).
    fallback: the page less its landmarks of chrome, for pages trafilatura empties (listings).

May import: `engine.tasks` (its URL helpers: `tasks.urls`), lxml, html-text, and, lazily, the
`content` extra (trafilatura, markdownify). Never Dagster.
"""

from scrapeflow_dagster.engine.content.main_content import CONTENT_EXTRA, MainContent, main_content

__all__ = ["CONTENT_EXTRA", "MainContent", "main_content"]
