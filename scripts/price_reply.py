"""Prices a reply with a model's tokenizer (harness.library: parse, price) and prints the figures and the
seconds it took, imports included: the cost of pricing a reply in a fresh process. No model runs; a
bundled name's tokenizer is read alone (harness/tokens.py).

    HF_HUB_OFFLINE=1 python scripts/price_reply.py [--model local/smollm2-135m] [--format auto]
                                                   [--reply FILE --project DIR]

Without --reply and --project: a SEARCH/REPLACE reply to a one-file project in a temporary directory.
"""

import time

START = time.perf_counter()

import argparse  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

from deltaserve.harness import TokenCounter, parse, price  # noqa: E402

SOURCE = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
REPLY = ("add() subtracts.\n\ncalc.py\n```\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n"
         ">>>>>>> REPLACE\n```\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local/smollm2-135m", help="whose tokenizer counts")
    parser.add_argument("--format", default="auto", help="the edit format the reply is read in")
    parser.add_argument("--reply", type=Path, help="a file holding the reply")
    parser.add_argument("--project", type=Path, help="the directory the reply edits")
    args = parser.parse_args()
    if (args.reply is None) != (args.project is None):
        parser.error("--reply and --project go together")
    reply = args.reply.read_text() if args.reply else REPLY
    project = args.project or Path(tempfile.mkdtemp())
    if args.project is None:
        (project / "calc.py").write_text(SOURCE)
    imported = time.perf_counter()
    cost = price(parse(reply, args.format), project, TokenCounter(args.model))
    done = time.perf_counter()
    print(f"{args.model}: edit_tokens={cost.edit_tokens} whole_file_tokens={cost.whole_file_tokens} "
          f"decode_saved={cost.decode_saved}")
    print(f"priced in {done - START:.2f} s from the start ({imported - START:.2f} s imports, "
          f"{done - imported:.2f} s tokenizer + parse + price)")


if __name__ == "__main__":
    main()
