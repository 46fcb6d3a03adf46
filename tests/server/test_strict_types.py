"""Values of the wrong type are refused with a 400 naming the field, as OpenAI's API refuses them; a lax
validator once took "stream": "yes" for true and booleans for token ids."""

from __future__ import annotations

import openai
import pytest

TINY = "tiny"
CHAT = "/v1/chat/completions"
TEXT = "/v1/completions"
GOOD = {"model": TINY, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
PROMPT = {"model": TINY, "max_tokens": 2}

COERCED = [
    ("stream_yes", CHAT, {**GOOD, "stream": "yes"}, "stream"),
    ("stream_one", CHAT, {**GOOD, "stream": 1}, "stream"),
    ("ignore_eos_string", CHAT, {**GOOD, "ignore_eos": "true"}, "ignore_eos"),
    ("include_usage_string", CHAT, {**GOOD, "stream": True, "stream_options": {"include_usage": "on"}},
     "stream_options.include_usage"),
    ("max_tokens_string", CHAT, {**GOOD, "max_tokens": "3"}, "max_tokens"),
    ("max_tokens_float", CHAT, {**GOOD, "max_tokens": 3.5}, "max_tokens"),
    ("max_tokens_bool", CHAT, {**GOOD, "max_tokens": True}, "max_tokens"),
    ("n_bool", CHAT, {**GOOD, "n": True}, "n"),
    ("temperature_string", CHAT, {**GOOD, "temperature": "0.5"}, "temperature"),
    ("temperature_bool", CHAT, {**GOOD, "temperature": False}, "temperature"),
    ("seed_string", CHAT, {**GOOD, "seed": "7"}, "seed"),
    ("seed_past_int64", CHAT, {**GOOD, "seed": 2**64}, "seed"),
    ("content_number", CHAT, {**GOOD, "messages": [{"role": "user", "content": 5}]}, "messages.0.content"),
    ("model_number", CHAT, {**GOOD, "model": 7}, "model"),
    ("bool_token_ids", TEXT, {**PROMPT, "prompt": [True, False]}, "prompt"),
    ("bool_in_token_id_batch", TEXT, {**PROMPT, "prompt": [[1, 2], [True]]}, "prompt"),
    ("fractional_token_ids", TEXT, {**PROMPT, "prompt": [1.5, 2.0]}, "prompt"),
    ("negative_token_id", TEXT, {**PROMPT, "prompt": [3, -1]}, "prompt"),
    ("chat_logprobs_string", CHAT, {**GOOD, "logprobs": "yes"}, "logprobs"),
    ("chat_logprobs_number", CHAT, {**GOOD, "logprobs": 1}, "logprobs"),
    ("completion_logprobs_bool", TEXT, {**PROMPT, "prompt": "hi", "logprobs": True}, "logprobs"),
    ("top_logprobs_float", CHAT, {**GOOD, "logprobs": True, "top_logprobs": 2.5}, "top_logprobs"),
    ("penalty_string", CHAT, {**GOOD, "frequency_penalty": "1"}, "frequency_penalty"),
]


@pytest.mark.parametrize("name,path,body,param", COERCED, ids=[c[0] for c in COERCED])
def test_a_value_of_the_wrong_type_is_a_400_naming_its_field(http, name, path, body, param):
    r = http.post(path, json=body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid_value" and error["param"] == param, error
    assert error["message"].startswith(param + ": ")


def test_a_token_id_list_that_fits_no_form_says_why_each_refused(http):
    error = http.post(TEXT, json={**PROMPT, "prompt": [True]}).json()["error"]
    assert "matches none of the accepted types" in error["message"]
    assert "].0: Input should be a valid integer" in error["message"]  # the token-id list's reason


def test_the_right_types_still_pass(http):
    """Integers where a number is asked, whole numbers where an integer is (JSON has one number type), real
    booleans, token ids and batches of them."""
    r = http.post(CHAT, json={**GOOD, "stream": False, "temperature": 1, "top_p": 1, "ignore_eos": True,
                              "seed": -(2**63)})
    assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 3
    r = http.post(TEXT, json={**PROMPT, "prompt": [[1, 2], [3]]})
    assert r.status_code == 200 and len(r.json()["choices"]) == 2
    r = http.post(TEXT, json={**PROMPT, "prompt": [1.0, 2.0], "max_tokens": 2.0, "ignore_eos": True})
    assert r.status_code == 200 and r.json()["usage"] == {**r.json()["usage"], "prompt_tokens": 2,
                                                          "completion_tokens": 2}
    r = http.post(TEXT, json={**PROMPT, "prompt": "hi", "logprobs": 2.0, "frequency_penalty": 1,
                              "presence_penalty": -2})
    assert r.status_code == 200 and len(r.json()["choices"][0]["logprobs"]["tokens"]) == 2
    r = http.post(CHAT, json={**GOOD, "logprobs": True, "top_logprobs": 0.0})
    assert r.status_code == 200 and len(r.json()["choices"][0]["logprobs"]["content"]) == 3


def test_openai_client_gets_a_bad_request_error(openai_client):
    with pytest.raises(openai.BadRequestError) as info:
        openai_client.completions.create(model=TINY, prompt=[True, False], max_tokens=2)
    assert info.value.param == "prompt" and info.value.code == "invalid_value"
