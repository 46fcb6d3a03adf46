"""SEARCH markers that name their file, and conflict markers that are not SEARCH markers."""

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
