import json

import pytest

from tinyhttp import Response


class Recorder:
    """A transport that records requests and answers from a list of (status, json) pairs."""

    def __init__(self, answers=None):
        self.requests = []
        self.answers = list(answers or [])

    def __call__(self, request):
        self.requests.append(request)
        status, data = self.answers.pop(0) if self.answers else (200, {})
        return Response(status, {"Content-Type": "application/json"}, json.dumps(data).encode())


@pytest.fixture
def recorder():
    return Recorder()


@pytest.fixture
def make_recorder():
    return Recorder
