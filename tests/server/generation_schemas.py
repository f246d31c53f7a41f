"""Hand-written JSON Schemas for the generation-correctness corpus: every keyword
docs/structured_output.md lists as supported, alone and combined, plus tool
definitions in the shape public APIs publish them (OpenAI / Anthropic function
calling examples, GitHub, Slack, Stripe, calendar and mail APIs). Used by
test_schema_generation.py (a CI sample) and bench/schema_generation.py (the long
check: every schema, both real models, temperature 1).

Each entry: (name, prompt, schema). Strings are bounded (maxLength) or enumerated
where a 135M model would otherwise write until max_tokens."""

S = {"type": "string", "maxLength": 24}
I = {"type": "integer", "minimum": -1000, "maximum": 1000}


def obj(props, required=None, extra=False, **kw):
    d = {"type": "object", "properties": props, "required": list(props) if required is None else required,
         "additionalProperties": extra}
    d.update(kw)
    return d


SCHEMAS = [
    # --- types ---
    ("string", "Say a word.", {"type": "string", "maxLength": 20}),
    ("integer", "Pick a number.", {"type": "integer", "minimum": 0, "maximum": 99}),
    ("number", "Give a temperature.", {"type": "number", "minimum": -50, "maximum": 50}),
    ("boolean", "Is the sky blue?", {"type": "boolean"}),
    ("null", "Say nothing.", {"type": "null"}),
    ("type-list", "A value.", {"type": ["integer", "boolean", "null"], "minimum": 0, "maximum": 9}),
    ("array-of-int", "Some numbers.", {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 100},
                                       "maxItems": 5}),
    ("object-closed-empty", "An empty JSON object.", {"type": "object", "additionalProperties": False}),
    ("object-one", "A name.", obj({"name": S})),
    ("object-two-types", "A person.", obj({"name": S, "age": {"type": "integer", "minimum": 0, "maximum": 120}})),
    # --- properties: required / optional / order ---
    ("optional-keys", "A contact.", obj({"name": S, "email": {"type": "string", "format": "email"},
                                         "phone": {"type": "string", "pattern": "^[0-9]{3}-[0-9]{4}$"}}, ["name"])),
    ("all-optional", "Settings.", obj({"dark": {"type": "boolean"}, "size": {"enum": ["s", "m", "l"]}}, [])),
    # `kind` has no property, so additionalProperties values it (with `false` no value would satisfy the schema).
    ("required-no-property", "A record.", {"type": "object", "properties": {"id": I}, "required": ["id", "kind"],
                                           "additionalProperties": {"type": "string", "maxLength": 12}}),
    ("additional-true", "A bag.", {"type": "object", "properties": {"id": I}, "required": ["id"],
                                   "additionalProperties": {"type": "boolean"}}),
    ("additional-schema", "Scores.", {"type": "object", "properties": {"math": I}, "required": ["math"],
                                      "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 10}}),
    ("additional-schema-open", "Counts by word.", {"type": "object", "properties": {"total": I}, "required": ["total"],
                                                   "additionalProperties": {"type": "integer", "minimum": 0,
                                                                            "maximum": 5}}),
    # --- enum / const ---
    ("enum-strings", "A colour.", {"enum": ["red", "green", "blue"]}),
    ("enum-mixed", "A value.", {"enum": ["a", 1, True, None, 2.5]}),
    ("enum-objects", "A point.", {"enum": [{"x": 1, "y": 2}, {"x": 0, "y": 0}, [1, 2]]}),
    ("const-string", "Say ok.", {"const": "ok"}),
    ("const-in-object", "A version record.", obj({"version": {"const": 2}, "name": S})),
    ("enum-in-array", "Some sizes.", {"type": "array", "items": {"enum": ["xs", "s", "m", "l", "xl"]}, "minItems": 1,
                                      "maxItems": 4}),
    # --- anyOf / oneOf / allOf ---
    ("anyof-types", "A value.", {"anyOf": [{"type": "string", "maxLength": 10}, {"type": "integer", "minimum": 0,
                                                                                  "maximum": 9}]}),
    ("anyof-objects", "A shape.", {"anyOf": [obj({"circle": {"type": "number", "minimum": 0, "maximum": 10}}),
                                             obj({"square": {"type": "number", "minimum": 0, "maximum": 10}})]}),
    ("oneof-types", "An id.", {"oneOf": [{"type": "integer", "minimum": 0, "maximum": 999}, {"type": "null"}]}),
    ("oneof-const-tag", "An event.", {"oneOf": [
        obj({"kind": {"const": "click"}, "x": I, "y": I}),
        obj({"kind": {"const": "key"}, "key": {"type": "string", "maxLength": 1, "minLength": 1}})]}),
    ("oneof-enum-disjoint", "A pet.", {"oneOf": [{"enum": ["cat", "dog"]}, {"enum": ["fish", "bird"]}]}),
    ("allof-merge", "A user.", {"allOf": [obj({"name": S}, ["name"], True),
                                          {"properties": {"age": {"type": "integer", "minimum": 0, "maximum": 99}},
                                           "required": ["age"]}]}),
    ("allof-bounds", "A number.", {"allOf": [{"type": "integer", "minimum": 0}, {"maximum": 50}]}),
    ("nullable-anyof", "A maybe-name.", obj({"name": {"anyOf": [S, {"type": "null"}]}})),
    # --- $ref / $defs / recursion ---
    ("ref-defs", "An address.", {"$defs": {"addr": obj({"street": S, "city": S})}, "$ref": "#/$defs/addr"}),
    ("ref-definitions", "Two points.", {"definitions": {"pt": obj({"x": I, "y": I})}, "type": "object",
                                        "properties": {"a": {"$ref": "#/definitions/pt"},
                                                       "b": {"$ref": "#/definitions/pt"}},
                                        "required": ["a", "b"], "additionalProperties": False}),
    ("ref-recursive-tree", "A small tree.", {"$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "integer", "minimum": 0, "maximum": 9},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
        "required": ["v"], "additionalProperties": False}}, "$ref": "#/$defs/node"}),
    ("ref-recursive-list", "A linked list.", {"$defs": {"cell": {"type": "object", "properties": {
        "head": {"type": "integer", "minimum": 0, "maximum": 9},
        "tail": {"anyOf": [{"$ref": "#/$defs/cell"}, {"type": "null"}]}},
        "required": ["head", "tail"], "additionalProperties": False}}, "$ref": "#/$defs/cell"}),
    ("ref-root", "Nested boxes.", {"type": "object", "properties": {"inner": {"anyOf": [{"$ref": "#"},
                                                                                         {"type": "null"}]}},
                                   "required": ["inner"], "additionalProperties": False}),
    # --- arrays ---
    ("items-min-max", "Three words.", {"type": "array", "items": S, "minItems": 3, "maxItems": 3}),
    ("prefix-items", "A pair.", {"type": "array", "prefixItems": [S, I], "items": False}),
    ("prefix-items-more", "A row.", {"type": "array", "prefixItems": [{"const": "row"}], "items": I, "maxItems": 4}),
    ("tuple-draft7", "A triple.", {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array",
                                   "items": [I, I, {"type": "boolean"}], "additionalItems": False}),
    ("array-of-objects", "Two people.", {"type": "array", "items": obj({"name": S, "age": I}), "minItems": 1,
                                         "maxItems": 2}),
    ("array-unique-one", "A list with one tag.", {"type": "array", "items": S, "uniqueItems": True, "maxItems": 1}),
    ("nested-arrays", "A matrix.", {"type": "array", "items": {"type": "array", "items": {
        "type": "integer", "minimum": 0, "maximum": 9}, "minItems": 2, "maxItems": 2}, "minItems": 2, "maxItems": 2}),
    # --- strings ---
    ("min-max-length", "A code.", {"type": "string", "minLength": 4, "maxLength": 6}),
    ("pattern-anchored", "A zip code.", {"type": "string", "pattern": "^[0-9]{5}$"}),
    ("pattern-search", "Text with a digit.", {"type": "string", "pattern": "^[a-z ]{0,20}[0-9]$"}),
    ("pattern-alternation", "A yes or no.", {"type": "string", "pattern": "^(yes|no|maybe)$"}),
    ("pattern-classes", "An identifier.", {"type": "string", "pattern": "^[a-z_][a-z0-9_]{0,15}$"}),
    ("format-date", "A date.", {"type": "string", "format": "date"}),
    ("format-time", "A time.", {"type": "string", "format": "time"}),
    ("format-date-time", "A timestamp.", {"type": "string", "format": "date-time"}),
    ("format-uuid", "An id.", {"type": "string", "format": "uuid"}),
    ("format-email", "An email.", {"type": "string", "format": "email"}),
    ("unicode-string", "A word in French.", {"type": "string", "minLength": 1, "maxLength": 12}),
    # --- numbers ---
    ("int-range", "A dice roll.", {"type": "integer", "minimum": 1, "maximum": 6}),
    ("int-exclusive", "A percentage.", {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 100}),
    ("int-negative", "A cold temperature.", {"type": "integer", "minimum": -90, "maximum": -1}),
    ("int-min-only", "A big count.", {"type": "integer", "minimum": 1000, "maximum": 100000000}),
    ("number-integral-bounds", "A ratio.", {"type": "number", "minimum": 0, "maximum": 1}),
    ("number-open", "Any number.", {"type": "number", "minimum": -1000000, "maximum": 1000000}),
    ("int-draft4-exclusive", "A level.", {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer",
                                          "minimum": 0, "exclusiveMinimum": True, "maximum": 10}),
    # --- no type: every type by its own keywords ---
    ("untyped-bounds", "A value.", {"maxLength": 5, "minimum": 0, "maximum": 5, "maxItems": 0, "additionalProperties": False}),
    # --- combined documents ---
    ("product", "A product.", obj({"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{3}$"}, "name": S,
                                   "price": {"type": "number", "minimum": 0, "maximum": 10000},
                                   "tags": {"type": "array", "items": {"enum": ["new", "sale", "eco"]},
                                            "maxItems": 3},
                                   "in_stock": {"type": "boolean"}}, ["sku", "name", "price"])),
    ("order", "An order.", obj({"id": {"type": "string", "format": "uuid"}, "placed": {"type": "string",
                                                                                        "format": "date-time"},
                                "lines": {"type": "array", "minItems": 1, "maxItems": 3, "items": obj({
                                    "sku": S, "qty": {"type": "integer", "minimum": 1, "maximum": 99}})},
                                "status": {"enum": ["new", "paid", "shipped"]}})),
    ("calendar-day", "A day plan.", obj({"date": {"type": "string", "format": "date"}, "events": {
        "type": "array", "maxItems": 3, "items": obj({"at": {"type": "string", "format": "time"}, "what": S})}})),
    ("config", "A server config.", obj({"host": {"type": "string", "pattern": "^[a-z0-9.-]{1,30}$"},
                                        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                                        "tls": {"type": "boolean"},
                                        "mode": {"enum": ["dev", "prod"]}}, ["host", "port"])),
    ("geo", "A location.", obj({"lat": {"type": "number", "minimum": -90, "maximum": 90},
                                "lon": {"type": "number", "minimum": -180, "maximum": 180}, "label": S}, ["lat", "lon"])),
    ("review", "A review.", obj({"stars": {"type": "integer", "minimum": 1, "maximum": 5},
                                 "title": {"type": "string", "maxLength": 30},
                                 "recommend": {"type": "boolean"}})),
    ("recipe", "A recipe.", obj({"title": S, "servings": {"type": "integer", "minimum": 1, "maximum": 12},
                                 "steps": {"type": "array", "items": {"type": "string", "maxLength": 30},
                                           "minItems": 1, "maxItems": 3}})),
    ("log-entry", "A log line.", obj({"level": {"enum": ["debug", "info", "warn", "error"]},
                                      "ts": {"type": "string", "format": "date-time"},
                                      "msg": {"type": "string", "maxLength": 40}})),
    ("matrix-meta", "A dataset.", obj({"rows": {"type": "integer", "minimum": 0, "maximum": 100},
                                       "cols": {"type": "integer", "minimum": 0, "maximum": 100},
                                       "name": {"anyOf": [S, {"type": "null"}]}})),
    ("feature-flags", "Feature flags.", {"type": "object", "properties": {"beta": {"type": "boolean"}},
                                         "additionalProperties": {"type": "boolean"}, "required": ["beta"]}),
    ("person-nested", "A person with an address.", obj({"name": S, "address": obj({
        "city": S, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}), "emails": {
        "type": "array", "items": {"type": "string", "format": "email"}, "maxItems": 2}}, ["name", "address"])),
    ("inventory", "Inventory counts.", {"type": "array", "maxItems": 3, "items": {"type": "array", "prefixItems": [
        S, {"type": "integer", "minimum": 0, "maximum": 500}], "items": False, "minItems": 2}}),
    ("classification", "Classify the text.", obj({"label": {"enum": ["positive", "negative", "neutral"]},
                                                  "confidence": {"type": "number", "minimum": 0, "maximum": 1}})),
    ("extraction", "Extract entities.", obj({"people": {"type": "array", "items": S, "maxItems": 3},
                                             "places": {"type": "array", "items": S, "maxItems": 3},
                                             "dates": {"type": "array", "items": {"type": "string", "format": "date"},
                                                       "maxItems": 2}})),
    ("chain-of-thought", "Answer with reasoning.", obj({"reasoning": {"type": "string", "maxLength": 60},
                                                        "answer": {"type": "integer", "minimum": 0, "maximum": 100}})),
    ("semver", "A version.", {"type": "string", "pattern": "^[0-9]{1,2}\\.[0-9]{1,2}\\.[0-9]{1,2}$"}),
    ("hex-colour", "A colour code.", {"type": "string", "pattern": "^#[0-9a-f]{6}$"}),
    ("union-payload", "A payload.", obj({"data": {"anyOf": [{"type": "array", "items": I, "maxItems": 3},
                                                            obj({"value": I}), {"type": "string", "maxLength": 10}]}})),
    ("deep-nesting", "A nested object.", obj({"a": obj({"b": obj({"c": obj({"d": {"type": "boolean"}})})})})),
]

# Tool definitions in the shape public APIs document them (function calling).
TOOLS = [
    ("openai-get-weather", "What is the weather in Paris?", obj({
        "location": {"type": "string", "description": "City and country e.g. Bogota, Colombia", "maxLength": 40},
        "units": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, ["location", "units"])),
    ("openai-send-email", "Email Bob that I am late.", obj({
        "to": {"type": "string", "format": "email"}, "subject": {"type": "string", "maxLength": 40},
        "body": {"type": "string", "maxLength": 80}})),
    ("openai-search-kb", "Search the docs for refunds.", obj({
        "query": {"type": "string", "maxLength": 40}, "options": obj({
            "num_results": {"type": "integer", "minimum": 1, "maximum": 10},
            "domain_filter": {"type": ["string", "null"], "maxLength": 30},
            "sort_by": {"type": ["string", "null"], "enum": ["relevance", "date", "popularity", "alphabetical", None]}})})),
    ("anthropic-get-stock-price", "Price of AAPL?", obj({
        "ticker": {"type": "string", "pattern": "^[A-Z]{1,5}$", "description": "The stock ticker symbol"}})),
    ("anthropic-get-time", "What time is it in Tokyo?", obj({
        "timezone": {"type": "string", "maxLength": 40, "description": "IANA time zone name"}})),
    ("github-create-issue", "Open an issue about a crash.", obj({
        "owner": {"type": "string", "maxLength": 20}, "repo": {"type": "string", "maxLength": 20},
        "title": {"type": "string", "maxLength": 40}, "body": {"type": "string", "maxLength": 60},
        "labels": {"type": "array", "items": {"type": "string", "maxLength": 15}, "maxItems": 3},
        "assignees": {"type": "array", "items": {"type": "string", "maxLength": 15}, "maxItems": 2}},
        ["owner", "repo", "title"])),
    ("github-list-pulls", "List open pull requests.", obj({
        "owner": {"type": "string", "maxLength": 20}, "repo": {"type": "string", "maxLength": 20},
        "state": {"enum": ["open", "closed", "all"]}, "per_page": {"type": "integer", "minimum": 1, "maximum": 100}},
        ["owner", "repo"])),
    ("slack-post-message", "Tell #general hello.", obj({
        "channel": {"type": "string", "pattern": "^[#@]?[a-z0-9_-]{1,20}$"}, "text": {"type": "string", "maxLength": 60},
        "thread_ts": {"type": "string", "pattern": "^[0-9]{10}\\.[0-9]{6}$"}}, ["channel", "text"])),
    ("stripe-create-charge", "Charge 20 dollars.", obj({
        "amount": {"type": "integer", "minimum": 50, "maximum": 99999999}, "currency": {"enum": ["usd", "eur", "gbp"]},
        "description": {"type": "string", "maxLength": 40}, "capture": {"type": "boolean"}}, ["amount", "currency"])),
    ("calendar-create-event", "Book a meeting tomorrow at 10.", obj({
        "summary": {"type": "string", "maxLength": 40}, "start": {"type": "string", "format": "date-time"},
        "end": {"type": "string", "format": "date-time"},
        "attendees": {"type": "array", "items": {"type": "string", "format": "email"}, "maxItems": 3},
        "reminder_minutes": {"type": "integer", "minimum": 0, "maximum": 1440}}, ["summary", "start", "end"])),
    ("maps-directions", "Directions from Rome to Milan.", obj({
        "origin": {"type": "string", "maxLength": 30}, "destination": {"type": "string", "maxLength": 30},
        "mode": {"enum": ["driving", "walking", "bicycling", "transit"]}, "avoid_tolls": {"type": "boolean"}},
        ["origin", "destination"])),
    ("db-query", "Find users older than 30.", obj({
        "table": {"enum": ["users", "orders", "products"]}, "filters": {"type": "array", "maxItems": 3, "items": obj({
            "field": {"type": "string", "pattern": "^[a-z_]{1,20}$"}, "op": {"enum": ["=", "!=", "<", ">", "<=", ">="]},
            "value": {"anyOf": [{"type": "string", "maxLength": 20}, {"type": "integer", "minimum": -100000,
                                                                      "maximum": 100000}, {"type": "boolean"}]}})},
        "limit": {"type": "integer", "minimum": 1, "maximum": 1000}}, ["table"])),
    ("shell-run", "List the files.", obj({
        "command": {"type": "string", "maxLength": 60}, "timeout_s": {"type": "integer", "minimum": 1, "maximum": 600}},
        ["command"])),
    ("file-write", "Save a note.", obj({
        "path": {"type": "string", "pattern": "^[a-zA-Z0-9_./-]{1,40}$"}, "content": {"type": "string", "maxLength": 80},
        "append": {"type": "boolean"}}, ["path", "content"])),
    ("translate", "Translate hello to French.", obj({
        "text": {"type": "string", "maxLength": 60}, "source": {"type": "string", "pattern": "^[a-z]{2}$"},
        "target": {"type": "string", "pattern": "^[a-z]{2}$"}}, ["text", "target"])),
    ("web-search", "Search for kiln.", obj({
        "q": {"type": "string", "maxLength": 40}, "count": {"type": "integer", "minimum": 1, "maximum": 20},
        "freshness": {"enum": ["day", "week", "month"]}}, ["q"])),
    ("todo-add", "Add buy milk to my list.", obj({
        "title": {"type": "string", "maxLength": 40}, "due": {"type": "string", "format": "date"},
        "priority": {"type": "integer", "minimum": 1, "maximum": 4}}, ["title"])),
    ("unit-convert", "Convert 5 miles to km.", obj({
        "value": {"type": "number", "minimum": -1000000, "maximum": 1000000},
        "from_unit": {"enum": ["mi", "km", "m", "ft"]}, "to_unit": {"enum": ["mi", "km", "m", "ft"]}})),
    ("payment-refund", "Refund order 42.", obj({
        "charge_id": {"type": "string", "pattern": "^ch_[A-Za-z0-9]{8,24}$"},
        "amount": {"type": "integer", "minimum": 1, "maximum": 1000000},
        "reason": {"enum": ["duplicate", "fraudulent", "requested_by_customer"]}}, ["charge_id"])),
    ("weather-forecast", "Forecast for Oslo for 3 days.", obj({
        "city": {"type": "string", "maxLength": 30}, "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "hourly": {"type": "boolean"}}, ["city"])),
    ("k8s-scale", "Scale the web deployment to 3.", obj({
        "namespace": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$"},
        "deployment": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$"},
        "replicas": {"type": "integer", "minimum": 0, "maximum": 100}})),
    ("flight-search", "Flights from LHR to JFK on May 3.", obj({
        "from": {"type": "string", "pattern": "^[A-Z]{3}$"}, "to": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "date": {"type": "string", "format": "date"}, "passengers": {"type": "integer", "minimum": 1, "maximum": 9},
        "cabin": {"enum": ["economy", "premium", "business", "first"]}}, ["from", "to", "date"])),
    ("crm-create-contact", "Add Ada to the CRM.", obj({
        "first_name": {"type": "string", "maxLength": 20}, "last_name": {"type": "string", "maxLength": 20},
        "email": {"type": "string", "format": "email"},
        "company": {"type": ["string", "null"], "maxLength": 30},
        "lifecycle": {"enum": ["lead", "customer", "other"]}}, ["first_name", "email"])),
    ("image-generate", "Draw a cat.", obj({
        "prompt": {"type": "string", "maxLength": 60}, "size": {"enum": ["256x256", "512x512", "1024x1024"]},
        "n": {"type": "integer", "minimum": 1, "maximum": 4}}, ["prompt"])),
    ("code-review", "Review this diff.", obj({
        "verdict": {"enum": ["approve", "request_changes", "comment"]},
        "comments": {"type": "array", "maxItems": 2, "items": obj({
            "line": {"type": "integer", "minimum": 1, "maximum": 10000}, "text": {"type": "string", "maxLength": 40}})}})),
]

ALL = SCHEMAS + TOOLS


def validator(schema):
    """A jsonschema validator for `schema` that checks formats too: jsonschema's
    own checkers (date, email, uuid, ...) plus time and date-time as RFC 3339
    (which jsonschema checks only with an optional package)."""
    import datetime
    import re

    import jsonschema

    checker = jsonschema.FormatChecker()
    rfc_time = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\.[0-9]+)?([zZ]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$")

    @checker.checks("time")
    def is_time(value):
        return not isinstance(value, str) or bool(rfc_time.match(value))

    @checker.checks("date-time")
    def is_date_time(value):
        if not isinstance(value, str):
            return True
        m = re.match(r"^([0-9]{4}-[0-9]{2}-[0-9]{2})[tT](.*)$", value)
        if not m or not rfc_time.match(m.group(2)):
            return False
        try:
            datetime.date.fromisoformat(m.group(1))
        except ValueError:
            return False
        return True

    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=checker)
