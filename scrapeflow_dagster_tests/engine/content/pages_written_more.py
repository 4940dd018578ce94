"""The second set's written pages, continued (`pages_written`): listings, articles and others.
All text here was written for this project; names of products, people and sites are made up."""

from scrapeflow_dagster_tests.engine.content.page_kit import (
    Chrome,
    code,
    heading,
    items,
    para,
    quote,
    raw,
    table,
)
from scrapeflow_dagster_tests.engine.content.pages_written import (
    ARTICLE_HEAD,
    COOKIES,
    NEWS_BOTTOM,
    NEWS_TOP,
    SHOP_BOTTOM,
    SHOP_TOP,
    Written,
)

WRITTEN_MORE: list[Written] = [
    Written(
        url="https://shop.example.com/kitchen/kettles",
        file="listing-category.html",
        kind="listing",
        title="Kettles | Harbor Home",
        style="divs",
        chrome=Chrome(
            top=SHOP_TOP, bottom=SHOP_BOTTOM, side=["Filter by price", "Filter by colour"]
        ),
        blocks=[
            heading(1, "Kettles"),
            raw(
                '<div class="grid">'
                + "".join(
                    f'<div class="card"><a href="/p/{slug}"><h3>{name}</h3></a>'
                    f'<span class="price">{price}</span></div>'
                    for slug, name, price in [
                        ("aurora", "Aurora electric kettle 1.7 l", "€ 49.90"),
                        ("brisk", "Brisk travel kettle 0.5 l", "€ 24.50"),
                        ("copper", "Copper stove-top kettle", "€ 61.00"),
                        ("delta", "Delta glass kettle with light", "€ 39.95"),
                        ("ember", "Ember gooseneck pour-over kettle", "€ 72.00"),
                    ]
                )
                + "</div>",
                "Aurora electric kettle 1.7 l\n€ 49.90\nBrisk travel kettle 0.5 l\n€ 24.50\n"
                "Copper stove-top kettle\n€ 61.00\nDelta glass kettle with light\n€ 39.95\n"
                "Ember gooseneck pour-over kettle\n€ 72.00",
                [
                    "Aurora electric kettle 1.7 l",
                    "€ 49.90",
                    "Brisk travel kettle 0.5 l",
                    "€ 24.50",
                    "Copper stove-top kettle",
                    "€ 61.00",
                    "Delta glass kettle with light",
                    "€ 39.95",
                    "Ember gooseneck pour-over kettle",
                    "€ 72.00",
                ],
            ),
        ],
    ),
    Written(
        url="https://search.example.com/?q=tide+tables",
        file="listing-search.html",
        kind="listing",
        title="tide tables - Search",
        style="semantic",
        chrome=Chrome(
            top=["All results", "Images", "Maps", "Settings"],
            bottom=["Help - Privacy - Terms", "Your location is estimated from your address"],
        ),
        blocks=[
            heading(1, "Results for tide tables"),
            raw(
                "<ol class='results'>"
                + "".join(
                    f"<li><h3><a href='{href}'>{title}</a></h3><cite>{href}</cite>"
                    f"<p>{snippet}</p></li>"
                    for title, href, snippet in [
                        (
                            "Tide tables for the northern coast",
                            "https://tides.example.net/north",
                            "High and low water times for every harbour, a year ahead.",
                        ),
                        (
                            "How tides are predicted",
                            "https://sea.example.org/predicting",
                            "Harmonic constants, measured over decades, give each port its curve.",
                        ),
                        (
                            "Printable tide calendar 2027",
                            "https://print.example.com/tides-2027",
                            "A wall calendar with the spring and neap tides marked.",
                        ),
                    ]
                )
                + "</ol>",
                "Tide tables for the northern coast\nhttps://tides.example.net/north\n"
                "High and low water times for every harbour, a year ahead.\n"
                "How tides are predicted\nhttps://sea.example.org/predicting\n"
                "Harmonic constants, measured over decades, give each port its curve.\n"
                "Printable tide calendar 2027\nhttps://print.example.com/tides-2027\n"
                "A wall calendar with the spring and neap tides marked.",
                [
                    "Tide tables for the northern coast",
                    "High and low water times for every harbour, a year ahead.",
                    "How tides are predicted",
                    "Harmonic constants, measured over decades, give each port its curve.",
                    "Printable tide calendar 2027",
                    "A wall calendar with the spring and neap tides marked.",
                ],
            ),
        ],
    ),
    Written(
        url="https://blog.example.dev/",
        file="listing-blog-index.html",
        kind="listing",
        title="Field notes - a blog about small tools",
        style="divs",
        chrome=Chrome(
            top=["Archive", "About", "Feed"],
            side=["Tags: shell", "Tags: editors", "Tags: networking"],
            bottom=["Written by Tomasz Weller. Text under a Creative Commons licence."],
        ),
        blocks=[
            heading(1, "Field notes"),
            heading(2, "Reading logs with less and a few flags"),
            para("Three flags that make less follow a growing log without losing your place."),
            heading(2, "A Makefile that explains itself"),
            para("A help target that prints every target with the comment above it."),
            heading(2, "Why my tunnel dropped every ten minutes"),
            para("A keep-alive setting on one side and an idle timer on the other."),
        ],
    ),
    Written(
        url="https://jobs.example.org/search?city=hillfield",
        file="listing-jobs.html",
        kind="listing",
        title="Jobs in Hillfield",
        style="tables",
        chrome=Chrome(
            top=["Find jobs", "Post a job", "Salaries", "Career advice"],
            bottom=["Jobs Board Ltd, registered in Hillfield", "Cookie settings"],
        ),
        blocks=[
            heading(1, "42 jobs in Hillfield"),
            table(
                ["Position", "Employer", "Posted"],
                [
                    ["Ferry deckhand, seasonal", "Hillfield Harbour Lines", "2 days ago"],
                    ["Data engineer", "Greywater Analytics", "5 days ago"],
                    ["Bakery assistant, early shift", "Crumb and Crust", "1 week ago"],
                    ["Electrician for solar installations", "Sunline Services", "2 weeks ago"],
                ],
            ),
        ],
    ),
    Written(
        url="https://forum.example.net/t/kettle-limescale/381",
        file="other-forum-thread.html",
        kind="other",
        title="Best way to remove limescale from a kettle? - Home forum",
        style="semantic",
        chrome=Chrome(
            top=["Latest", "Categories", "Top", "Log in"],
            side=["Suggested topics: descaling a coffee machine", "Hard water filters, worth it?"],
            bottom=["Powered by open source forum software", "Community guidelines"],
        ),
        blocks=[
            heading(1, "Best way to remove limescale from a kettle?"),
            raw(
                "<div class='post'><span class='user'>noor_b</span><p>Our water is very hard"
                " and the kettle is white inside after a week. Vinegar smells for days.</p></div>"
                "<div class='post'><span class='user'>harbourcat</span><p>Citric acid, two"
                " spoons in half a litre, boil and leave for an hour. No smell at all.</p></div>"
                "<div class='post'><span class='user'>noor_b</span><p>Tried it this morning and"
                " it is clean again, thank you.</p></div>",
                "noor_b\nOur water is very hard and the kettle is white inside after a week. "
                "Vinegar smells for days.\nharbourcat\nCitric acid, two spoons in half a litre,"
                " boil and leave for an hour. No smell at all.\nnoor_b\nTried it this morning "
                "and it is clean again, thank you.",
                [
                    "Our water is very hard and the kettle is white inside after a week.",
                    "Vinegar smells for days.",
                    "Citric acid, two spoons in half a litre, boil and leave for an hour.",
                    "Tried it this morning and it is clean again, thank you.",
                ],
            ),
        ],
    ),
    Written(
        url="https://courier.example.net/city/night-ferry-winter?utm_source=feed",
        file="article-news.html",
        kind="article",
        title="Night ferry stays on through the winter - The Riverside Courier",
        style="semantic",
        chrome=Chrome(
            top=NEWS_TOP,
            bottom=NEWS_BOTTOM,
            banner=COOKIES,
            related=[
                "Bridge repairs to close the east lane until May",
                "Harbour fees rise for the first time in a decade",
                "Letters: the ferry is our bus",
            ],
            head=ARTICLE_HEAD,
        ),
        blocks=[
            heading(1, "Night ferry stays on through the winter"),
            para(
                "The city council voted on Tuesday to keep the night ferry between the old "
                "harbour and Eastbank running until March, reversing a plan to stop it in "
                "November to save money."
            ),
            para(
                "A petition signed by more than four thousand residents asked for the service "
                "to stay, saying that shift workers at the hospital and the bakeries have no "
                "other way home after midnight."
            ),
            quote("We heard them, and we found the money in the harbour budget."),
            para(
                "The ferry will run every forty minutes between eleven at night and five in "
                "the morning. The council will review the figures in spring, when a study of "
                "a night bus along the bridge is due."
            ),
            para(
                "Fares stay as they are. Season tickets bought for the day ferry are valid on "
                "the night crossings too, the harbour office said."
            ),
        ],
    ),
    Written(
        url="https://blog.example.dev/2026/makefile-help",
        file="article-blog-code.html",
        kind="article",
        title="A Makefile that explains itself - Field notes",
        style="divs",
        chrome=Chrome(
            top=["Archive", "About", "Feed"],
            side=["Tags: shell", "Tags: editors", "Tags: networking"],
            bottom=["Written by Tomasz Weller. Text under a Creative Commons licence."],
            related=["Reading logs with less and a few flags", "Why my tunnel dropped"],
            head=(
                '<meta name="author" content="Tomasz Weller">'
                '<meta property="article:published_time" content="2026-09-21">'
            ),
        ),
        blocks=[
            heading(1, "A Makefile that explains itself"),
            para(
                "Every project I join has a Makefile with thirty targets and no way to know "
                "which ones matter. Here is the help target I now add first."
            ),
            code(
                "help:  ## list the targets and what they do\n"
                "\t@grep -E '^[a-z-]+:.*## ' Makefile | sed 's/:.*## /\\t/'",
                language="make",
            ),
            para(
                "Each target gets a comment after two hashes on its own line; the help target "
                "prints them in the order they are written."
            ),
            heading(2, "What it does not do"),
            items(
                [
                    "It does not follow included Makefiles.",
                    "It ignores targets written with variables in their names.",
                ]
            ),
            para("Comments and corrections are welcome by mail."),
        ],
    ),
    Written(
        url="https://recipes.example.com/barley-soup",
        file="article-recipe.html",
        kind="article",
        title="Barley and leek soup",
        style="tables",
        chrome=Chrome(
            top=["Soups", "Breads", "Desserts", "Weeknight dinners"],
            side=["Most cooked this week", "Seasonal: winter roots", "Print this recipe"],
            bottom=["Recipes by the Kitchen Table collective", "Share on social media"],
            banner="Get a new recipe every Friday: sign up for the letter.",
        ),
        blocks=[
            heading(1, "Barley and leek soup"),
            para("A thick soup for cold evenings, ready in an hour, for four people."),
            heading(2, "Ingredients"),
            items(
                [
                    "150 g pearl barley, rinsed",
                    "2 leeks, sliced into rings",
                    "1 carrot, diced small",
                    "1.5 litres vegetable stock",
                    "A handful of parsley",
                ]
            ),
            heading(2, "Method"),
            items(
                [
                    "Soften the leeks and carrot in a little butter for ten minutes.",
                    "Add the barley and stock and simmer for forty minutes.",
                    "Season, stir in the parsley and serve with dark bread.",
                ],
                ordered=True,
            ),
        ],
    ),
    Written(
        url="https://greywater.example.com/news/2026-press-release",
        file="article-press.html",
        kind="article",
        title="Greywater Analytics opens an office in Hillfield",
        style="semantic",
        chrome=Chrome(
            top=["Products", "Company", "Newsroom", "Investors", "Contact"],
            bottom=["Greywater Analytics GmbH", "Media contact: press office"],
            head='<meta name="description" content="Forty jobs in data engineering.">',
            lang="en-GB",
        ),
        blocks=[
            heading(1, "Greywater Analytics opens an office in Hillfield"),
            para("Hillfield, 1 December 2026."),
            para(
                "Greywater Analytics will open its third office in Hillfield in February and "
                "hire forty data engineers over the next two years."
            ),
            para(
                "The office, in the old harbour warehouse, will work on the company's tidal "
                "energy forecasts for grid operators along the coast."
            ),
            heading(2, "About Greywater Analytics"),
            para("Greywater Analytics builds forecasting software for energy networks."),
        ],
    ),
    Written(
        url="https://lighthouse.example.org/about",
        file="other-about.html",
        kind="other",
        title="About the Lighthouse Trust",
        style="divs",
        chrome=Chrome(
            top=["Visit", "Events", "Volunteer", "Donate"],
            bottom=["Registered charity number 000000", "Lighthouse Lane 1, Hillfield"],
            banner=COOKIES,
        ),
        blocks=[
            heading(1, "About the Trust"),
            para(
                "The Lighthouse Trust looks after the old light on the point and the keeper's "
                "cottage beside it, open to visitors from April to October."
            ),
            heading(2, "What we do"),
            items(
                [
                    "Guided climbs to the lamp room every Saturday",
                    "School visits on the history of the coast",
                    "Repairs to the tower, paid for by members",
                ]
            ),
            heading(2, "Opening hours"),
            table(
                ["Season", "Days", "Hours"],
                [
                    ["April to June", "Wednesday to Sunday", "10:00 to 17:00"],
                    ["July and August", "Every day", "10:00 to 19:00"],
                    ["September and October", "Weekends", "11:00 to 16:00"],
                ],
            ),
        ],
    ),
    Written(
        url="https://events.example.org/hillfield/december",
        file="listing-events.html",
        kind="listing",
        title="Events in December - Hillfield",
        style="semantic",
        chrome=Chrome(
            top=["This week", "This month", "Submit an event"],
            side=["Music", "Markets", "Family", "Sport"],
            bottom=["Event times may change; check with the organiser."],
        ),
        blocks=[
            heading(1, "December in Hillfield"),
            items(
                [
                    "5 December: Winter market on the harbour front, from 10:00",
                    "9 December: Choir of the old church, carols at 19:30",
                    "14 December: Lantern walk along the dunes, meet at the lighthouse",
                    "21 December: Midwinter swim, for the brave, at noon",
                    "31 December: Fireworks over the bay at midnight",
                ]
            ),
        ],
    ),
]
