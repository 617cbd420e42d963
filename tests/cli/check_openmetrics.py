#!/usr/bin/env python3
"""Strict OpenMetrics 1.0 text check of a scrape read from stdin (or a file argument).

Runs a small checker of its own (the rules rcuda's exposition relies on), then, when
prometheus_client is importable, its reference OpenMetrics parser too. Exit 1 with the
offending line on the first violation."""
import math
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\\\|\\"|\\n)*"'
SAMPLE = re.compile(rf"^({NAME})(\{{(?:{LABEL}(?:,{LABEL})*)?\}})? (\S+)$")
TYPES = {"gauge", "counter", "info", "stateset", "histogram", "gaugehistogram", "summary", "unknown"}


def fail(n, line, why):
    print(f"openmetrics: line {n}: {why}: {line!r}", file=sys.stderr)
    sys.exit(1)


def check(text):
    if not text.endswith("# EOF\n"):
        fail(0, text[-40:], "must end with '# EOF\\n'")
    lines = text[:-1].split("\n")
    families, current, seen_samples = {}, None, set()
    for n, line in enumerate(lines[:-1], 1):
        if line == "":
            fail(n, line, "blank line")
        if line.startswith("#"):
            m = re.match(rf"^# (TYPE|UNIT|HELP) ({NAME}) ?(.*)$", line)
            if not m:
                fail(n, line, "bad metadata line")
            kind, name, rest = m.groups()
            if name != current:
                if name in families:
                    fail(n, line, "family interleaved or repeated")
                families[name] = {"type": "unknown", "unit": ""}
                current = name
            if kind == "TYPE":
                if rest not in TYPES:
                    fail(n, line, "unknown type")
                families[name]["type"] = rest
                if rest == "counter" and name.endswith("_total"):
                    fail(n, line, "counter family name must not end in _total")
            elif kind == "UNIT":
                if not name.endswith("_" + rest):
                    fail(n, line, "metric name must end with its unit")
                families[name]["unit"] = rest
            elif re.search(r'\\[^\\n"]', rest):
                fail(n, line, "bad escape in HELP")
            continue
        m = SAMPLE.match(line)
        if not m:
            fail(n, line, "bad sample line")
        name, labels, value = m.groups()
        fam = families.get(current)
        if fam is None:
            fail(n, line, "sample before any family metadata")
        allowed = {"counter": [current + "_total", current + "_created"]}.get(fam["type"], [current])
        if name not in allowed:
            fail(n, line, f"sample name not allowed in {fam['type']} family {current}")
        try:
            v = float(value)
        except ValueError:
            fail(n, line, "value is not a number")
        if fam["type"] == "counter" and (v < 0 or math.isnan(v)):
            fail(n, line, "counter value must be >= 0")
        key = (name, labels or "")
        if key in seen_samples:
            fail(n, line, "duplicate series")
        seen_samples.add(key)
    return families


def main():
    text = open(sys.argv[1]).read() if len(sys.argv) > 1 else sys.stdin.read()
    families = check(text)
    try:
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
    except ImportError:
        print(f"openmetrics: {len(families)} families OK (own checker; prometheus_client not installed)")
        return
    parsed = list(text_string_to_metric_families(text))
    if len(parsed) != len(families):
        print(f"openmetrics: prometheus_client found {len(parsed)} families, expected {len(families)}", file=sys.stderr)
        sys.exit(1)
    print(f"openmetrics: {len(families)} families OK (own checker and prometheus_client)")


if __name__ == "__main__":
    main()
