"""docs/harness.md's library example runs as written (model call scripted with litellm's mock_response)."""

import re
from pathlib import Path

from deltaserve.harness import client as harness_client

DOC = Path(__file__).resolve().parents[2] / "docs" / "harness.md"
REPLY = "calc.py\n```\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n```"


def test_docs_example_runs(project, monkeypatch, capsys):
    code = re.search(r"```python\n(.*?)```\n", DOC.read_text(), flags=re.DOTALL).group(1)
    real = harness_client.complete
    monkeypatch.setattr(harness_client, "complete", lambda *a, **kw: real(*a, **kw, mock_response=REPLY))
    exec(compile(code.replace("path/to/project", str(project)), str(DOC), "exec"), {})
    assert (project / "calc.py").read_text().startswith("def add(a, b):\n    return a + b\n")
    assert '"decode_saved"' in capsys.readouterr().out
