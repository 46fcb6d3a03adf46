"""Fuzz: any files rendered in `whole` syntax parse back to the same files (fences inside included)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from deltaserve.harness import formats
from deltaserve.harness.formats.whole import render

line = st.one_of(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"),
                         max_size=30),
                 st.sampled_from(["```", "  ```", "````python", "```diff", "~~~", "", "    "]))
content = st.lists(line, max_size=12).map(lambda lines: "".join(f"{x}\n" for x in lines))
path = st.from_regex(r"[a-z][a-z0-9_]{0,8}(/[a-z0-9_]{1,8}){0,2}\.(py|md|txt)", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(path, content, min_size=1, max_size=3))
def test_render_parse_round_trip(files):
    parsed = formats.get("whole").parse(render(files))
    assert {f.path: f.content for f in parsed} == files
