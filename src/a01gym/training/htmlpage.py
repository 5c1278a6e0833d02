"""The markup of the run report: one self-contained HTML page rendered with Jinja2.

Jinja2 autoescapes every value, so transcript text written by a model or an agent shows as text
and never runs. The page loads nothing from outside (no CDN, no scripts, no fonts); a
Content-Security-Policy forbids scripts outright and allows images only from beside the page.
:mod:`a01gym.training.report` computes what goes in; this module only lays it out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jinja2

__all__ = ["render"]

_TEMPLATE = """\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
      content="default-src 'none'; img-src 'self' file: data:; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>a01gym report: {{ title }}</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1180px; padding: 1rem 2rem;
       color: #1d2330; }
h1 { margin-bottom: .2rem; } h2 { border-bottom: 1px solid #d5d9e0; padding-bottom: .2rem;
  margin-top: 2.2rem; }
nav a { margin-right: 1rem; }
table { border-collapse: collapse; margin: .6rem 0 1rem; }
th, td { border: 1px solid #d5d9e0; padding: .25rem .6rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f1f3f6; }
img { max-width: 100%; border: 1px solid #e3e6eb; }
.note { color: #6a7180; font-style: italic; }
.meta { color: #4a5160; }
details { margin: .5rem 0; } summary { cursor: pointer; font-weight: 600; }
pre { background: #f6f7f9; border: 1px solid #e3e6eb; padding: .5rem; overflow-x: auto;
      white-space: pre-wrap; word-break: break-word; margin: .2rem 0 .6rem; font-size: 13px; }
.step { border-left: 3px solid #9bb0d6; padding-left: .7rem; margin: .8rem 0; }
.step .error { color: #a3261b; }
.diff .file { font-weight: 600; }
.diff .add { color: #146c2e; } .diff .del { color: #a3261b; } .diff .hunk { color: #6f42c1; }
</style>
</head>
<body>
<h1>a01gym report</h1>
<p class="meta">Run <code>{{ title }}</code>, written {{ generated }}.</p>
<nav>{% for id, name in sections %}<a href="#{{ id }}">{{ name }}</a>{% endfor %}</nav>
{% if notes %}
<ul class="note">{% for note in notes %}<li>{{ note }}</li>{% endfor %}</ul>
{% endif %}

{% macro table(t) -%}
<table>
<thead><tr>{% for h in t.header %}<th>{{ h }}</th>{% endfor %}</tr></thead>
<tbody>{% for row in t.rows %}<tr>{% for cell in row %}<td>{{ cell }}</td>{% endfor %}</tr>
{% endfor %}</tbody>
</table>
{%- endmacro %}

<section id="training">
<h2>Training</h2>
{% if training %}
<img src="{{ training.image }}" alt="reward, rates and time per GRPO step">
{{ table(training.summary) }}
{% if training.families %}
<h3>Per family at the last step</h3>
{{ table(training.families) }}
{% endif %}
{% else %}<p class="note">No metrics.jsonl in this run: no training curves.</p>{% endif %}
</section>

<section id="evaluation">
<h2>Evaluation</h2>
{% if evaluation %}
<img src="{{ evaluation.image }}" alt="mean reward per family and label">
{{ table(evaluation.overall) }}
<h3>Mean reward per family</h3>
{{ table(evaluation.families) }}
{% else %}<p class="note">No eval/&lt;label&gt;/episodes.jsonl in this run: nothing evaluated.</p>
{% endif %}
{% if comparison %}
<h3>Comparison</h3>
{% for t in comparison %}<p class="meta">{{ t.caption }}</p>{{ table(t) }}{% endfor %}
{% else %}<p class="note">No eval/comparison.json: no statistical comparison.</p>{% endif %}
</section>

<section id="breakdown">
<h2>Reward breakdown</h2>
{% if breakdown %}
<p class="meta">Means over each label's episodes that reached grading. Reward is security ×
regression (the score) minus penalties, failing closed.</p>
<img src="{{ breakdown.image }}" alt="mean reward components per label">
{{ table(breakdown.table) }}
{% else %}<p class="note">No graded episodes: no reward breakdown.</p>{% endif %}
</section>

<section id="expert">
<h2>Expert</h2>
{% if expert %}
<p class="meta">Rollouts that could ask the expert vs solo ones; evaluation is solo unless a run
says otherwise. Shaping (solo bonus, recovery bonus, blind-call penalty) is reported apart from
the reward.{% if expert.phase %} The ratio ended in the <strong>{{ expert.phase }}</strong>
phase.{% endif %}</p>
{% if expert.image %}<img src="{{ expert.image }}" alt="expert share, call rate and solo vs
assisted resolution per GRPO step">{% endif %}
{% if expert.pass.rows %}<h3>Solo vs expert-assisted</h3>{{ table(expert.pass) }}{% endif %}
{% if expert.steps %}<h3>Expert ratio per GRPO step</h3>{{ table(expert.steps) }}{% endif %}
{% else %}<p class="note">No rollout or episode in this run could ask the expert.</p>{% endif %}
</section>

<section id="transcripts">
<h2>Transcripts</h2>
{% for t in transcripts %}
<details class="transcript"{% if loop.first %} open{% endif %}>
<summary>{{ t.title }}</summary>
<p class="meta">{{ t.meta }}</p>
{% if t.briefing %}
<details class="briefing"><summary>Briefing</summary><pre>{{ t.briefing }}</pre></details>
{% endif %}
{% for step in t.steps %}
<div class="step">
<strong>Step {{ loop.index }}: action</strong>
<pre>{{ step.action }}</pre>
<strong>output</strong>{% if step.error %} <span class="error">({{ step.error }})</span>{% endif %}
<pre>{{ step.output }}</pre>
</div>
{% else %}<p class="note">No steps recorded.</p>{% endfor %}
<h4>Final diff</h4>
{% if t.diff is none %}<p class="note">No diff recorded for this episode.</p>
{% elif not t.diff %}<p class="note">The agent changed nothing.</p>
{% else %}<pre class="diff">{% for kind, line in t.diff %}<span class="{{ kind }}">{{ line }}</span>
{% endfor %}</pre>{% endif %}
</details>
{% else %}<p class="note">No transcripts: no episode logs or chat messages in this run.</p>
{% endfor %}
{% if missing_transcripts %}<p class="note">{{ missing_transcripts }}</p>{% endif %}
</section>

<section id="config">
<h2>Configuration</h2>
{% if config %}<details><summary>config.yaml</summary><pre>{{ config }}</pre></details>
{% else %}<p class="note">No config.yaml in this run.</p>{% endif %}
</section>
</body>
</html>
"""

_ENVIRONMENT = jinja2.Environment(
    autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True
)


def render(context: Mapping[str, Any]) -> str:
    """The page for ``context`` (the keys the template names; see ``report._context``)."""
    return _ENVIRONMENT.from_string(_TEMPLATE).render(**context)
