"""deltaserve tools: pure functions over a sandboxed Workspace, shared by the harness and the MCP server.

workspace.py     Workspace(root): every path resolved inside root (no absolute, '..', NUL, .git,
                 symlinks out of it)
files.py         view (numbered, windowed), list_files (.gitignore-aware), grep (capped)
patch.py         apply_patch / apply_search_replace(_blocks) / write_file: all or nothing, atomic,
                 style-keeping
  diff_parse.py  repairs model-written unified diffs, then unidiff parses them
  hunks.py       finds hunks by content: exact -> rstrip -> indent -> blank-lines -> fuzzy
  search_replace.py  aider-style SEARCH/REPLACE blocks
  textfile.py    encoding / newline / final-newline / mode preserving reads and atomic writes
fences.py        the one code-fence scanner (diffs, SEARCH/REPLACE blocks and the edit formats use it)
tests.py         run_tests: process-group kill on timeout, head+tail output cap, pytest summary parsing
mcp_server.py    the same tools over MCP (stdio): `deltaserve mcp --root DIR`
"""
