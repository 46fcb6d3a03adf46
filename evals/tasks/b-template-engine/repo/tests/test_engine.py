import pytest

from minitpl import (
    Environment,
    Markup,
    StrictUndefined,
    TemplateError,
    TemplateNotFound,
    TemplateSyntaxError,
    UndefinedError,
)


@pytest.fixture
def env():
    return Environment()


def test_output_and_expressions(env):
    assert env.render("Hello {{ name }}!", name="Ada") == "Hello Ada!"
    assert env.render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ 'a' ~ 1 }}") == "7 9 3 a1"
    assert env.render("{{ user.name }} {{ user['age'] }} {{ xs[1] }} {{ xs.0 }}", user={"name": "B", "age": 3}, xs=[4, 5]) == "B 3 5 4"


def test_conditions(env):
    tpl = env.from_string("{% if n > 10 %}big{% elif n > 5 %}mid{% else %}small{% endif %}")
    assert [tpl.render(n=n) for n in (20, 7, 1)] == ["big", "mid", "small"]
    assert env.render("{{ 'y' if 'a' in word and not flag else 'n' }}", word="cat", flag=False) == "y"
    assert env.render("{{ 3 not in [1, 2] }}") == "True"


def test_filters(env):
    assert env.render("{{ name|upper }} {{ items|join(', ') }} {{ items|length }}", name="x", items=["a", "b"]) == "X a, b 2"
    assert env.render("{{ missing|default('n/a') }}") == "n/a"
    assert env.render("{{ 'hello big world'|truncate(11) }}") == "hello..."
    assert env.render("{{ people|sort(attribute='age')|join(',', attribute='name') }}",
                      people=[{"name": "b", "age": 9}, {"name": "a", "age": 3}]) == "a,b"
    assert env.render("{{ 2.5|round }} {{ '12x'|int(-1) }} {{ '<b>hi</b>'|striptags }}") == "3.0 -1 hi"


def test_for_loop_and_loop_variable(env):
    out = env.render("{% for x in xs %}{{ loop.index }}:{{ x }}{% if not loop.last %},{% endif %}{% endfor %}", xs="abc")
    assert out == "1:a,2:b,3:c"
    assert env.render("{% for x in [] %}x{% else %}empty{% endfor %}") == "empty"
    assert env.render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", d={"a": 1, "b": 2}) == "a=1;b=2;"
    assert env.render("{% for n in range(10) if n % 3 == 0 %}{{ n }}{% endfor %}") == "0369"
    assert env.render("{% for x in xs %}{{ loop.cycle('odd', 'even') }} {% endfor %}", xs=[1, 2, 3]) == "odd even odd "


def test_nested_loops_keep_outer_loop_info(env):
    tpl = env.from_string(
        "{% for row in rows %}{% for cell in row %}{{ cell }}{% endfor %}"
        "{% if not loop.last %}|{% endif %}{{ loop.index }}{% endfor %}"
    )
    assert tpl.render(rows=[[1, 2], [3], [4, 5, 6]]) == "12|13|2456" + "3"


def test_loop_variables_do_not_leak(env):
    tpl = env.from_string("{% for item in items %}{% set last_seen = item %}{% endfor %}[{{ item }}][{{ last_seen }}]")
    assert tpl.render(items=[1, 2], item="outer") == "[outer][]"


def test_set_at_top_level(env):
    assert env.render("{% set greeting = 'hi ' ~ name %}{{ greeting|title }}", name="bo") == "Hi Bo"


def test_whitespace_control_comments_and_raw(env):
    src = "<ul>\n  {%- for x in xs %}\n  <li>{{ x }}</li>\n  {%- endfor %}\n</ul>{# note #}"
    assert env.render(src, xs=[1, 2]) == "<ul>\n  <li>1</li>\n  <li>2</li>\n</ul>"
    assert env.render("{% raw %}{{ not parsed }}{% endraw %}") == "{{ not parsed }}"


def test_autoescape():
    env = Environment(autoescape=True)
    assert env.render("<p>{{ text }}</p>", text="<script>&") == "<p>&lt;script&gt;&amp;</p>"
    assert env.render("{{ html|safe }}", html="<b>x</b>") == "<b>x</b>"
    assert env.render("{{ items|join('<br>') }}", items=["<a>", Markup("<i>b</i>")]) == "&lt;a&gt;&lt;br&gt;<i>b</i>"


def test_include_shares_context():
    env = Environment({"row.html": "<td>{{ cell }}</td>", "table.html": "{% for cell in cells %}{% include 'row.html' %}{% endfor %}"})
    assert env.get_template("table.html").render(cells=[1, 2]) == "<td>1</td><td>2</td>"
    with pytest.raises(TemplateNotFound):
        env.get_template("nope.html")


def test_undefined_behaviour():
    assert Environment().render("[{{ nope }}][{{ nope.deeper }}]") == "[][]"
    strict = Environment(undefined=StrictUndefined)
    with pytest.raises(UndefinedError):
        strict.render("{{ nope }}")
    assert strict.render("{{ nope|default('ok') }}") == "ok"


@pytest.mark.parametrize(
    "source",
    ["{% if x %}never closed", "{{ 1 + }}", "{% for in xs %}{% endfor %}", "{% bogus %}", "{{ a b }}", "{{ x", "{% endif %}"],
)
def test_syntax_errors(env, source):
    with pytest.raises(TemplateSyntaxError):
        env.from_string(source)


def test_syntax_error_reports_line():
    with pytest.raises(TemplateSyntaxError) as info:
        Environment().from_string("line one\nline two {{ 1 + }}", name="page.html")
    assert info.value.lineno == 2 and "page.html" in str(info.value)


def test_runtime_errors(env):
    with pytest.raises(TemplateError):
        env.render("{{ 1 / 0 }}")
    with pytest.raises(TemplateError):
        env.render("{{ x|nosuchfilter }}", x=1)
    with pytest.raises(TemplateError):
        env.render("{{ obj.__class__ }}", obj=1)
