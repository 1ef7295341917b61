"""``cubecl_server.bounded``: JSON from elsewhere decoded within its bounds, whatever
brackets its strings hold."""

from __future__ import annotations

import json

import pytest

from cubecl_server.bounded import MAX_INT_DIGITS, Unbounded, check_depth, loads


def test_what_is_within_the_bounds_decodes_as_json_does() -> None:
    text = json.dumps({"a": [1, 2.5, None, True], "b": {"c": "x[{]}\"y\\"}, "d": "é"})
    assert loads(text, max_bytes=1000) == json.loads(text)
    assert loads(text.encode(), max_bytes=1000, max_depth=3) == json.loads(text)


@pytest.mark.parametrize(("text", "message"), [
    ("[" * 300 + "]" * 300, "nested deeper than 256 levels"),
    ('{"a":' * 300 + "1" + "}" * 300, "nested deeper than 256 levels"),
    ("[" * 100_000, "not JSON"),  # unbalanced: the decoder's own bound says so
    ("9" * (MAX_INT_DIGITS + 1), f"at most {MAX_INT_DIGITS}"),
    ("[NaN]", "non-standard JSON constant NaN"),
    ('{"a": 1', "not JSON"),
    (b"\xff", "not JSON"),
])
def test_what_breaks_a_bound_is_refused(text: str | bytes, message: str) -> None:
    with pytest.raises(Unbounded, match=message):
        loads(text, max_bytes=1 << 20)


def test_the_size_is_checked_first() -> None:
    with pytest.raises(Unbounded, match="more than the 10 allowed"):
        loads("[" * 11, max_bytes=10)


@pytest.mark.parametrize("text", [
    '["[[[[", "a\\"]]", {"x": "]"}]',  # brackets and escaped quotes in strings
    '["", "", "[", "]"]',  # neighbouring strings whose quotes meet
])
def test_brackets_in_strings_do_not_count(text: str) -> None:
    check_depth(text.encode(), 2)
    with pytest.raises(Unbounded):
        check_depth(text.encode(), 0)
