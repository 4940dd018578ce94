"""The second set's written pages: documentation, products, listings, articles and others, each
with its main blocks and its chrome (see `page_kit`). All text here was written for this
project; names of products, people and sites are made up."""

from dataclasses import dataclass

from scrapeflow_dagster_tests.engine.content.page_kit import (
    Block,
    Chrome,
    code,
    definitions,
    heading,
    items,
    para,
    quote,
    raw,
    table,
)


@dataclass
class Written:
    url: str
    file: str
    kind: str
    title: str
    style: str
    blocks: list[Block]
    chrome: Chrome


DOCS_TOP = ["Getting started", "User guide", "API reference", "Release notes", "Community forum"]
DOCS_SIDE = [
    "Installation on Linux",
    "Installation on macOS",
    "Configuring storage",
    "Running behind a proxy",
    "Upgrading between versions",
    "Troubleshooting imports",
]
DOCS_BOTTOM = [
    "Copyright 2026, the Lanternfish developers.",
    "Built with a documentation theme provided by the community.",
    "Edit this page on the source host",
]
SHOP_TOP = ["Kitchen", "Garden and outdoor", "Office supplies", "Gift cards", "Customer service"]
SHOP_BOTTOM = [
    "Free returns within 30 days on every order.",
    "Terms of sale - Privacy notice - Imprint",
    "Sign up for our newsletter and save 10 percent",
]
NEWS_TOP = ["World news", "Local politics", "Business and markets", "Science desk", "Opinion pages"]
NEWS_BOTTOM = [
    "The Riverside Courier is published by Courier Media Group.",
    "Contact the newsroom - Advertise with us - Careers at the Courier",
]
COOKIES = "We use cookies to improve your experience. By browsing this site you accept them."

ARTICLE_HEAD = (
    '<meta name="author" content="Maren Holt">'
    '<meta name="description" content="The city council voted to keep the night ferry running'
    ' through the winter, after a petition signed by four thousand residents.">'
    '<meta property="og:site_name" content="The Riverside Courier">'
    '<meta property="og:title" content="Night ferry stays on through the winter">'
    '<meta property="article:published_time" content="2026-11-03T08:15:00+01:00">'
    '<meta property="article:modified_time" content="2026-11-04T17:40:00+01:00">'
    '<link rel="canonical" href="https://courier.example.net/city/night-ferry-winter">'
)

WRITTEN_FIRST: list[Written] = [
    Written(
        url="https://docs.lanternfish.example/install.html",
        file="docs-install.html",
        kind="docs",
        title="Installation - Lanternfish 2.4 documentation",
        style="docs",
        chrome=Chrome(top=DOCS_TOP, side=DOCS_SIDE, bottom=DOCS_BOTTOM),
        blocks=[
            heading(1, "Installation"),
            para("Lanternfish runs on any system with Python 3.11 or newer and a C compiler."),
            heading(2, "From the package index", anchor="pip"),
            para("Install the latest release into a virtual environment:"),
            code("python -m venv .venv\n.venv/bin/pip install lanternfish", language="bash"),
            heading(2, "From source", anchor="source"),
            items(
                [
                    "Clone the repository and enter its folder.",
                    "Install the build requirements listed in requirements-build.txt.",
                    "Run the build script, which compiles the native parts.",
                    "Check the installation with lanternfish --version.",
                ],
                ordered=True,
            ),
            para(
                "If the build fails with a missing header, read ",
                ("Troubleshooting the build", "troubleshooting.html#headers"),
                " before opening an issue.",
            ),
        ],
    ),
    Written(
        url="https://docs.lanternfish.example/api/reader.html",
        file="docs-api-reader.html",
        kind="docs",
        title="lanternfish.reader - Lanternfish 2.4 documentation",
        style="docs",
        chrome=Chrome(
            top=DOCS_TOP,
            side=DOCS_SIDE,
            bottom=DOCS_BOTTOM,
            head='<base href="https://docs.lanternfish.example/v2/api/">',
        ),
        blocks=[
            heading(1, "lanternfish.reader"),
            para("Readers turn a stream of records into typed rows, one batch at a time."),
            code(
                "def open_reader(path: str, *, batch_rows: int = 4096) -> Reader:\n"
                '    """Open the file at path for reading."""',
                language="python",
            ),
            heading(2, "Parameters"),
            table(
                ["Name", "Type", "Meaning"],
                [
                    ["path", "str", "The file to read, local or remote."],
                    ["batch_rows", "int", "How many rows each batch holds at most."],
                ],
            ),
            heading(2, "Returns"),
            para("A Reader whose batches are read lazily; close it or use it in a with block."),
            heading(2, "Example"),
            code(
                "with open_reader('events.lf') as reader:\n"
                "    for batch in reader:\n"
                "        print(batch.num_rows)",
                language="python",
            ),
            para("See also ", ("the writer", "writer.html"), " and ", ("formats", "../formats/")),
        ],
    ),
    Written(
        url="https://docs.lanternfish.example/config.html",
        file="docs-config.html",
        kind="docs",
        title="Configuration reference",
        style="semantic",
        chrome=Chrome(top=DOCS_TOP, side=DOCS_SIDE, bottom=DOCS_BOTTOM, banner=COOKIES),
        blocks=[
            heading(1, "Configuration reference"),
            para("Every setting can be given in lanternfish.toml or as an environment variable."),
            table(
                ["Setting", "Default", "Description"],
                [
                    ["cache_dir", "~/.cache/lanternfish", "Where downloaded indexes are kept."],
                    ["max_workers", "4", "Worker processes started for a query."],
                    ["timeout_seconds", "30", "How long one remote read may take."],
                    ["log_level", "warning", "The least severe message that is logged."],
                    ["telemetry", "off", "Whether anonymous usage counts are sent."],
                ],
                caption="Settings and their defaults",
            ),
            heading(2, "Environment variables"),
            para(
                "A variable named LANTERNFISH_ followed by the setting's name overrides the file."
            ),
        ],
    ),
    Written(
        url="https://docs.lanternfish.example/faq.html",
        file="docs-faq.html",
        kind="docs",
        title="Frequently asked questions",
        style="divs",
        chrome=Chrome(top=DOCS_TOP, side=DOCS_SIDE, bottom=DOCS_BOTTOM),
        blocks=[
            heading(1, "Frequently asked questions"),
            definitions(
                [
                    ("Does Lanternfish run on Windows?", "Yes, from version 2.2, on 64-bit only."),
                    (
                        "Can two processes write one file?",
                        "No: writers take a lock, and a second writer waits for it.",
                    ),
                    (
                        "Why is my first query slow?",
                        "The index is built on first use and kept in the cache folder.",
                    ),
                    ("Is there a graphical interface?", "Not in the project; see the community."),
                ]
            ),
        ],
    ),
    Written(
        url="https://docs.lanternfish.example/changelog.html",
        file="docs-changelog.html",
        kind="docs",
        title="Release notes",
        style="docs",
        chrome=Chrome(top=DOCS_TOP, side=DOCS_SIDE, bottom=DOCS_BOTTOM),
        blocks=[
            heading(1, "Release notes"),
            heading(2, "2.4.0 (2026-10-12)"),
            items(
                [
                    "Readers accept remote paths over HTTPS.",
                    "The cache folder is created on first use.",
                    "Fixed a crash when a batch held no rows.",
                ]
            ),
            heading(2, "2.3.1 (2026-08-30)"),
            items(["Fixed the wheel for ARM machines.", "Documented the telemetry setting."]),
            heading(2, "2.3.0 (2026-07-02)"),
            items(["Writers compress with zstd by default.", "Dropped support for Python 3.10."]),
        ],
    ),
    Written(
        url="https://docs.lanternfish.example/de/cli.html",
        file="docs-cli-de.html",
        kind="docs",
        title="Kommandozeile - Lanternfish",
        style="tables",
        chrome=Chrome(
            lang="de",
            top=["Erste Schritte", "Handbuch", "Schnittstellen", "Versionshinweise"],
            side=["Installation unter Linux", "Speicher einrichten", "Fehlersuche beim Import"],
            bottom=["Copyright 2026, die Lanternfish-Entwickler.", "Diese Seite bearbeiten"],
        ),
        blocks=[
            heading(1, "Die Kommandozeile"),
            para("Der Befehl lanternfish liest, schreibt und prüft Dateien ohne eigenen Code."),
            code("lanternfish read events.lf --limit 10\nlanternfish check events.lf"),
            table(
                ["Option", "Bedeutung"],
                [
                    ["--limit N", "Höchstens N Zeilen ausgeben."],
                    ["--columns A,B", "Nur die genannten Spalten lesen."],
                    ["--quiet", "Nur Fehler melden, keine Fortschrittsanzeige."],
                ],
            ),
            para("Der Rückgabewert ist 0 bei Erfolg und 2 bei einer beschädigten Datei."),
        ],
    ),
    Written(
        url="https://shop.example.com/kettles/aurora-1-7",
        file="product-kettle.html",
        kind="product",
        title="Aurora electric kettle 1.7 l | Harbor Home",
        style="divs",
        chrome=Chrome(
            top=SHOP_TOP,
            bottom=SHOP_BOTTOM,
            banner=COOKIES,
            related=["Aurora toaster, two slots", "Glass teapot with infuser", "Descaler tablets"],
            head=(
                '<meta property="og:site_name" content="Harbor Home">'
                '<meta name="description" content="A quiet 1.7 litre kettle with a keep-warm'
                ' setting.">'
                '<link rel="canonical" href="https://shop.example.com/p/aurora-kettle">'
            ),
        ),
        blocks=[
            heading(1, "Aurora electric kettle 1.7 l"),
            raw('<p class="price">€ 49.90</p>', "€ 49.90", ["€ 49.90"]),
            para("A quiet kettle that boils a full litre in under three minutes."),
            items(
                [
                    "Keeps water at 80 degrees for up to an hour",
                    "Stainless steel inside, no plastic in contact with water",
                    "Removable limescale filter",
                ]
            ),
            heading(2, "Specifications"),
            table(
                ["Property", "Value"],
                [
                    ["Capacity", "1.7 litres"],
                    ["Power", "2200 watts"],
                    ["Cord length", "75 centimetres"],
                    ["Weight", "1.1 kilograms"],
                ],
            ),
            heading(2, "Customer reviews"),
            quote("Quieter than my old one and the lid opens gently. Four stars from Ilse."),
        ],
    ),
    Written(
        url="https://shop.example.com/books/tidal-atlas",
        file="product-book.html",
        kind="product",
        title="The Tidal Atlas - hardcover",
        style="semantic",
        chrome=Chrome(
            top=["Fiction", "Non-fiction", "Children's books", "Stationery"],
            side=["Bestsellers this week", "Staff recommendations", "Signed editions"],
            bottom=SHOP_BOTTOM,
            related=["The River Book", "Maps of Imagined Places", "Coastlines, a history"],
            head=(
                '<script type="application/ld+json">{"@context": "https://schema.org",'
                ' "@type": "Book", "name": "The Tidal Atlas", "author": {"@type": "Person",'
                ' "name": "Odile Ferrante"}, "datePublished": "2025-03-14"}</script>'
            ),
        ),
        blocks=[
            heading(1, "The Tidal Atlas"),
            para("by Odile Ferrante, hardcover, 312 pages"),
            raw('<div class="price"><span>$32.00</span></div>', "$32.00", ["$32.00"]),
            para(
                "A book of sea charts drawn from the logs of harbour pilots, with essays on "
                "how each coast was measured before satellites."
            ),
            definitions(
                [
                    ("Publisher", "Greywater Press"),
                    ("Published", "March 2025"),
                    ("ISBN", "978-0-00-000000-2"),
                ]
            ),
        ],
    ),
    Written(
        url="https://gear.example.org/tents/ridge-2",
        file="product-tent-soldout.html",
        kind="product",
        title="Ridge 2 tent - sold out",
        style="tables",
        chrome=Chrome(
            top=["Tents", "Sleeping bags", "Backpacks", "Clothing"],
            side=["Compare tents", "Size guide", "Care and repair"],
            bottom=["Gear Outpost, Main Street 4, 00000 Hillfield", "Opening hours and contact"],
        ),
        blocks=[
            heading(1, "Ridge 2 tent"),
            raw(
                '<p class="stock">Sold out, back in spring</p>',
                "Sold out, back in spring",
                ["Sold out, back in spring"],
            ),
            para("A two-person tent for three seasons that packs to the size of a bread loaf."),
            table(
                ["Packed size", "Weight", "Poles"],
                [["42 x 15 cm", "1.6 kg", "Two aluminium poles"]],
            ),
        ],
    ),
    Written(
        url="https://cloudly.example.io/pricing",
        file="product-pricing.html",
        kind="product",
        title="Pricing | Cloudly",
        style="semantic",
        chrome=Chrome(
            top=["Product", "Pricing", "Customers", "Blog", "Sign in"],
            bottom=["Cloudly Inc. All rights reserved.", "Status page - Security - Terms"],
            banner=COOKIES,
        ),
        blocks=[
            heading(1, "Plans and pricing"),
            para("Every plan includes unlimited projects and a 14-day trial."),
            raw(
                '<div class="plans"><div class="plan"><h3>Starter</h3><p>$9 per month</p>'
                "<ul><li>3 team members</li><li>10 GB of storage</li></ul></div>"
                '<div class="plan"><h3>Team</h3><p>$29 per month</p><ul><li>25 team members'
                "</li><li>200 GB of storage</li></ul></div>"
                '<div class="plan"><h3>Enterprise</h3><p>Talk to our sales team</p>'
                "<ul><li>Single sign-on and audit logs</li></ul></div></div>",
                "Starter\n$9 per month\n3 team members\n10 GB of storage\nTeam\n$29 per month\n"
                "25 team members\n200 GB of storage\nEnterprise\nTalk to our sales team\n"
                "Single sign-on and audit logs",
                [
                    "Starter",
                    "$9 per month",
                    "3 team members",
                    "10 GB of storage",
                    "$29 per month",
                    "25 team members",
                    "200 GB of storage",
                    "Enterprise",
                    "Talk to our sales team",
                    "Single sign-on and audit logs",
                ],
            ),
            heading(2, "Questions about billing"),
            para("Plans are billed monthly or yearly; a yearly plan costs two months less."),
        ],
    ),
]
