"""Selector sets: a typo is an error naming the file and field when the set is read, never an
empty column later; values come out typed as declared, and what did not match is said."""

from pathlib import Path

import pytest

from scrapeflow_dagster.engine.extract import (
    SelectorSetError,
    extract,
    install_selector_set,
    load_selector_set,
    parse_selector_set,
)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"fields": {"p": {"css": "a["}}}, "field 'p': css 'a[' does not compile"),
        ({"fields": {"p": {"xpath": "//["}}}, "field 'p': xpath '//[' does not compile"),
        ({"fields": {"p": {"css": "a", "xpath": "//a"}}}, "field 'p': give exactly one of css"),
        ({"fields": {"p": {"css": "a", "type": "money"}}}, "field 'p': type must be one of"),
        ({"fields": {"p": {"css": "a", "first": True}}}, "field 'p': unknown keys ['first']"),
        ({"fields": {"url": "a"}}, "field 'url': the name is a column of every row"),
        ({"fields": {"p": {"css": "a", "all": "yes"}}}, "field 'p': all must be true or false"),
        ({"fields": {}}, "'fields' must map field names to selectors"),
        ({"urls": "(", "fields": {"p": "a"}}, "urls '(' is not a valid regex"),
        ({"selectors": {"p": "a"}}, "unknown keys ['selectors']"),
        (["a"], "must hold a mapping with 'fields'"),
    ],
)
def test_a_bad_set_is_refused_naming_the_file_and_the_field(data: object, message: str) -> None:
    with pytest.raises(SelectorSetError) as raised:
        parse_selector_set("shop", data, source="shop.yaml")
    assert str(raised.value).startswith("shop.yaml: ")
    assert message in str(raised.value)


PAGE = """<html><head><base href="/shop/"></head><body>
<h1>  Blue
   widget </h1>
<span class="price">$1,299.50</span><span class="old">N/A</span>
<ul class="tags"><li>new</li><li> </li><li>sale</li></ul>
<img class="main" src="img/3.png?size=big&amp;x=%28a%29">
<span id="stock">yes</span><span id="count">12 left</span>
</body></html>"""


def test_fields_come_out_typed_and_what_matched_nothing_or_did_not_parse_is_said() -> None:
    selector_set = parse_selector_set(
        "shop",
        {
            "fields": {
                "name": "h1",  # an element: its text, spaces collapsed
                "raw_name": "h1::text",  # a text node: stripped only
                "price": {"css": ".price", "type": "number"},
                "old_price": {"css": ".old", "type": "number"},
                "tags": {"css": ".tags li", "all": True},  # a blank match is no value
                "image": {"css": "img.main", "attr": "src", "type": "url"},
                "in_stock": {"css": "#stock", "type": "boolean"},
                "left": {"xpath": "//*[@id='count']/text()", "type": "integer"},
                "rating": {"css": ".rating"},
                "reviews": {"css": ".review", "all": True},
            }
        },
        source="shop.yaml",
    )
    page_url = "http://127.0.0.1:8000/products/3"

    found = extract(PAGE, "http://127.0.0.1:8000/shop/", selector_set)

    assert found.fields == {
        "name": "Blue widget",
        "raw_name": "Blue\n   widget",
        "price": 1299.5,
        "old_price": None,
        "tags": ["new", "sale"],
        # Resolved against the document's base, escapes and query kept as written.
        "image": "http://127.0.0.1:8000/shop/img/3.png?size=big&x=%28a%29",
        "in_stock": True,
        "left": 12,
        "rating": None,
        "reviews": [],
    }
    assert found.missing == ["rating", "reviews"]
    assert found.invalid == {"old_price": "N/A"}
    assert selector_set.applies_to(page_url)


def test_a_set_is_stored_by_name_and_read_again_when_its_file_changes(tmp_path: Path) -> None:
    status_dir = tmp_path / "status"
    given = tmp_path / "shop.yaml"
    given.write_text('fields:\n  name: "h1::text"\n')

    stored, changed = install_selector_set(status_dir, given)
    again, changed_again = install_selector_set(status_dir, given)

    assert (stored.name, changed, changed_again) == ("shop", True, False)
    assert [f.name for f in load_selector_set(status_dir, "shop").fields] == ["name"]
    given.write_text('{"fields": {"name": "h1::text", "price": ".price"}}\n')  # JSON is YAML
    install_selector_set(status_dir, given)
    assert [f.name for f in load_selector_set(status_dir, "shop").fields] == ["name", "price"]
    with pytest.raises(SelectorSetError, match="selector set 'other' is not in"):
        load_selector_set(status_dir, "other")
    with pytest.raises(SelectorSetError, match="must be 1-100 letters"):
        load_selector_set(status_dir, "../shop")
