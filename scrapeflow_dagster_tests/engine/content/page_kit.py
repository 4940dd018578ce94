"""What the second set's pages are made of: main blocks that render to HTML and know their
text, and the chrome around them (menus, sidebars, footers, banners) whose text is marked as
not main. `make_pages` writes the set with them; the marking is the blocks' own text, so it is
exact by construction."""

import html
from dataclasses import dataclass, field

# A segment shorter than this is found by chance in any page's text: it is not marked.
MIN_SEGMENT_CHARS = 6


def esc(text: str) -> str:
    """`text` escaped for HTML."""
    return html.escape(text, quote=True)


@dataclass
class Block:
    """One block of main content: its HTML, its text (for the whole main text) and the
    segments marked as main (its paragraphs, items, cells, code lines)."""

    html: str
    text: str
    segments: list[str]


def heading(level: int, text: str, *, anchor: str | None = None) -> Block:
    attr = f' id="{anchor}"' if anchor else ""
    return Block(f"<h{level}{attr}>{esc(text)}</h{level}>", text, [text])


def para(*parts: str | tuple[str, str]) -> Block:
    """A paragraph of plain strings and `(text, href)` links."""
    inner, text = [], []
    for part in parts:
        if isinstance(part, tuple):
            inner.append(f'<a href="{esc(part[1])}">{esc(part[0])}</a>')
            text.append(part[0])
        else:
            inner.append(esc(part))
            text.append(part)
    joined = "".join(text)
    return Block(f"<p>{''.join(inner)}</p>", joined, [joined])


def items(values: list[str], *, ordered: bool = False, css: str = "") -> Block:
    tag = "ol" if ordered else "ul"
    attr = f' class="{css}"' if css else ""
    lis = "".join(f"<li>{esc(v)}</li>" for v in values)
    return Block(f"<{tag}{attr}>{lis}</{tag}>", "\n".join(values), list(values))


def code(source: str, *, language: str = "") -> Block:
    attr = f' class="language-{language}"' if language else ""
    lines = [line for line in source.splitlines() if line.strip()]
    return Block(f"<pre><code{attr}>{esc(source)}</code></pre>", source, lines)


def table(header: list[str], rows: list[list[str]], *, caption: str = "") -> Block:
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    text = "\n".join(" ".join(row) for row in [header, *rows])
    cells = [c for row in [header, *rows] for c in row]
    if caption:
        cells.insert(0, caption)
        text = caption + "\n" + text
    return Block(
        f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>", text, cells
    )


def definitions(pairs: list[tuple[str, str]]) -> Block:
    inner = "".join(f"<dt>{esc(t)}</dt><dd>{esc(d)}</dd>" for t, d in pairs)
    return Block(f"<dl>{inner}</dl>", "\n".join(f"{t}\n{d}" for t, d in pairs), [*sum(pairs, ())])


def quote(text: str) -> Block:
    return Block(f"<blockquote><p>{esc(text)}</p></blockquote>", text, [text])


def raw(markup: str, text: str, segments: list[str]) -> Block:
    """A block written as HTML by hand (cards, forum posts), with its text and segments."""
    return Block(markup, text, segments)


@dataclass
class Chrome:
    """What surrounds the main content; every text of it is marked as not main."""

    head: str = ""  # extra <head> markup: metadata
    lang: str = "en"
    top: list[str] = field(default_factory=list)  # the menu's entries
    side: list[str] = field(default_factory=list)  # a sidebar's entries
    bottom: list[str] = field(default_factory=list)  # the footer's lines
    banner: str = ""  # a cookie or newsletter banner
    related: list[str] = field(default_factory=list)  # "related" links after the content


def _links(values: list[str], prefix: str) -> str:
    return "".join(f'<li><a href="{prefix}{i}">{esc(v)}</a></li>' for i, v in enumerate(values))


def page(title: str, blocks: list[Block], chrome: Chrome, *, style: str) -> tuple[str, str]:
    """The page's HTML and its whole main text, laid out in one of four styles seen on real
    sites: `semantic` (HTML5 landmarks), `divs` (class-named divs), `docs` (a documentation
    theme: sidebar, body, "on this page"), `tables` (a layout table)."""
    main = "\n".join(b.html for b in blocks)
    top = f"<ul>{_links(chrome.top, '/section/')}</ul>" if chrome.top else ""
    side = f"<ul>{_links(chrome.side, '/side/')}</ul>" if chrome.side else ""
    bottom = "".join(f"<p>{esc(line)}</p>" for line in chrome.bottom)
    banner = f'<div class="cookie-banner"><p>{esc(chrome.banner)}</p><button>OK</button></div>'
    banner = banner if chrome.banner else ""
    related = (
        f'<section class="related"><h3>Related</h3><ul>{_links(chrome.related, "/r/")}</ul>'
        "</section>"
        if chrome.related
        else ""
    )
    if style == "semantic":
        body = (
            f"<header><a class='logo' href='/'>Home</a><nav>{top}</nav></header>"
            f"<main><article>{main}</article>{related}</main>"
            f"<aside>{side}</aside><footer>{bottom}</footer>{banner}"
        )
    elif style == "divs":
        body = (
            f'<div id="header"><div class="menu">{top}</div></div>'
            f'<div class="wrapper"><div class="col-main"><div class="content">{main}</div>'
            f'{related}</div><div class="col-side">{side}</div></div>'
            f'<div class="bottom">{bottom}</div>{banner}'
        )
    elif style == "docs":
        body = (
            f'<div class="topbar">{top}</div>'
            f'<div class="sphinxsidebar" role="navigation">{side}</div>'
            f'<div class="document"><div class="body" role="main">{main}</div></div>'
            f'<div class="footer" role="contentinfo">{bottom}</div>{banner}'
        )
    else:
        body = (
            f'<table width="100%"><tr><td colspan="2">{top}</td></tr>'
            f'<tr><td width="20%" valign="top">{side}</td><td valign="top">{main}{related}</td>'
            f"</tr><tr><td colspan='2'>{bottom}</td></tr></table>{banner}"
        )
    document = (
        f'<!DOCTYPE html>\n<html lang="{chrome.lang}"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title>{chrome.head}</head>\n<body>{body}</body></html>\n"
    )
    return document, "\n".join(b.text for b in blocks)


def marked_segments(blocks: list[Block]) -> list[str]:
    """The blocks' segments long enough to mark, each once."""
    seen: dict[str, None] = {}
    for block in blocks:
        for segment in block.segments:
            if len(segment.strip()) >= MIN_SEGMENT_CHARS:
                seen[segment.strip()] = None
    return list(seen)


def chrome_segments(chrome: Chrome) -> list[str]:
    """The chrome's texts long enough to mark as not main."""
    texts = [*chrome.top, *chrome.side, *chrome.bottom, *chrome.related]
    if chrome.banner:
        texts.append(chrome.banner)
    return [t for t in dict.fromkeys(texts) if len(t) >= MIN_SEGMENT_CHARS]
