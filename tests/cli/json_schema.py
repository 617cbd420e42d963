"""The schema half of the CLI's JSON validators: checks a report against a JSON Schema (draft
2020-12) in docs/, printing each error with its path and exiting 1 when there is one."""
import json
import os
import sys

import jsonschema


def validate(report, schema_name, tag):
    here = os.path.dirname(os.path.abspath(__file__))
    schema = json.load(open(os.path.join(here, "..", "..", "docs", schema_name)))
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(report),
                    key=lambda e: list(e.path))
    for e in errors:
        print(f"{tag}: {'/'.join(map(str, e.path))}: {e.message}", file=sys.stderr)
    if errors:
        sys.exit(1)
