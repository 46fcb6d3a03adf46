"""SEARCH markers that name their file, and conflict markers: text inside a block, a SEARCH line where a
whole block follows them."""

import pytest

from deltaserve.errors import PatchError
from deltaserve.tools.search_replace import parse_search_replace_blocks


def test_a_path_in_place_of_search_names_the_file():
    text = "other.py\n```\n<<<<<<< pkg/mod.py\nold\n=======\nnew\n>>>>>>> REPLACE\n```\n"
    [block] = parse_search_replace_blocks(text)
    assert (block.path, block.search, block.replace) == ("pkg/mod.py", "old\n", "new\n")


def test_a_conflict_marker_inside_a_block_is_text():
    text = ("mod.py\n<<<<<<< SEARCH\n<<<<<<< HEAD\nold\n=======\nnew\n>>>>>>> REPLACE\n")
    [block] = parse_search_replace_blocks(text)
    assert block.search == "<<<<<<< HEAD\nold\n"
    assert parse_search_replace_blocks("<<<<<<< HEAD\nx\n") == []


def test_a_block_written_in_conflict_style_is_read():
    """Two 1.5B replies: a conflict marker (or a function name) in place of SEARCH, REPLACE in any case."""
    for opening, closing in (("<<<<<<< HEAD", ">>>>>>> REPLACE"), ("<<<<<<< from_roman", ">>>>>>> replace")):
        text = f"mod.py\n```\n{opening}\nold\n=======\nnew\n{closing}\n```\n"
        [block] = parse_search_replace_blocks(text)
        assert (block.path, block.search, block.replace) == ("mod.py", "old\n", "new\n")
    assert parse_search_replace_blocks("mod.py\n<<<<<<< HEAD\nold\n=======\nnew\n>>>>>>> main\n") == []


def test_the_path_after_every_marker_is_read_as_the_plain_marker():
    """A 1.5B reply: the file's path after <<<<<<<, ======= and >>>>>>>, where SEARCH / REPLACE belong."""
    text = ("spans/intervals.py\n```\n<<<<<<< spans/intervals.py\n    return a <= b\n"
            "======= spans/intervals.py\n    return a < b\n>>>>>>> spans/intervals.py\n```\n")
    [block] = parse_search_replace_blocks(text)
    assert (block.path, block.search, block.replace) == ("spans/intervals.py", "    return a <= b\n",
                                                         "    return a < b\n")
    # a word that names no file stays text: `======= x` is no divider
    with pytest.raises(PatchError, match="no ======= line"):
        parse_search_replace_blocks("m.py\n<<<<<<< SEARCH\nx\n======= x\ny\n>>>>>>> REPLACE\n")


def test_markers_labelled_with_the_same_word_are_read():
    """A 1.5B reply labelled all three markers with the function it edits."""
    text = ("datekit/core.py\n```\n<<<<<<< quarter_of\n    return day.month // 3 + 1\n=======\n"
            "    return (day.month - 1) // 3 + 1\n>>>>>>> quarter_of\n```\n")
    [block] = parse_search_replace_blocks(text)
    assert (block.path, block.replace) == ("datekit/core.py", "    return (day.month - 1) // 3 + 1\n")
    labelled = text.replace("=======", "======= quarter_of")
    assert parse_search_replace_blocks(labelled) == [block]
