"""The rules every request body is held to (:func:`panoramia.service.schemas.check_body`),
stated in the OpenAPI document where the schema language can: text without NUL characters
(and, in the bodies whose text reaches an audit's config, without ``${``), integers of at most
64 bits, and free-form sections (``declared``, a report's sections) as JSON values holding
the same. Two rules stay in the bodies' descriptions: nesting at most
:data:`~panoramia.service.schemas.MAX_DEPTH` deep, and no lone surrogate (which is not a
Unicode character, so a JSON Schema string cannot hold one to refuse)."""

from __future__ import annotations

from typing import Any

from panoramia.service.schemas import MAX_DEPTH

TEXT = r"^[^\x00]*$"
"""Text without a NUL character (PostgreSQL's text and JSONB cannot hold one)."""
PLAIN_TEXT = r"^(?![\s\S]*\$\{)[^\x00]*$"
"""Text without NUL and without ``${`` (an OmegaConf interpolation)."""
PLAIN_BODIES = frozenset({"AuditRequest", "UploadCreate"})
"""Request bodies none of whose text may hold ``${`` (``_no_interpolation``)."""
WHOLE = 2**63 - 1
JSON_VALUE = {False: "JsonValue", True: "PlainJsonValue"}
"""The free-form JSON value's component, by whether ``${`` is refused in its text."""
Schema = dict[str, Any]
PREFIX = "#/components/schemas/"


def _json_value(plain: bool) -> Schema:
    text = PLAIN_TEXT if plain else TEXT
    itself = {"$ref": PREFIX + JSON_VALUE[plain]}
    return {
        "description": "Any JSON value: text without NUL"
        + (" or '${'" if plain else "")
        + f", integers of at most 64 bits, nested at most {MAX_DEPTH} deep.",
        "anyOf": [
            {"type": "string", "pattern": text},
            {"type": "integer", "minimum": -WHOLE, "maximum": WHOLE},
            {"type": "number", "not": {"type": "integer"}},
            {"type": "boolean"},
            {"type": "null"},
            {"type": "array", "items": itself},
            {"type": "object", "propertyNames": {"pattern": text}, "additionalProperties": itself},
        ],
    }


def _types(schema: Schema) -> set[str]:
    kind = schema.get("type")
    return {kind} if isinstance(kind, str) else set(kind or ())


def _state(schema: Schema, plain: bool) -> None:
    """Add the rules to one schema node (not its children)."""
    types = _types(schema)
    text = PLAIN_TEXT if plain else TEXT
    if "string" in types and not {"pattern", "enum", "const", "format"} & schema.keys():
        schema["pattern"] = text
    if "integer" in types:
        if "minimum" not in schema and "exclusiveMinimum" not in schema:
            schema["minimum"] = -WHOLE
        if "maximum" not in schema and "exclusiveMaximum" not in schema:
            schema["maximum"] = WHOLE
    if "object" in types:
        extra = schema.get("additionalProperties", True)
        if extra is True:
            schema["additionalProperties"] = {"$ref": PREFIX + JSON_VALUE[plain]}
        if extra is not False and "propertyNames" not in schema:
            schema["propertyNames"] = {"pattern": text}


def _walk(node: object, plain: bool, schemas: Schema, seen: dict[str, bool]) -> None:
    """State the rules on every schema under ``node``, following references once each."""
    if isinstance(node, list):
        for item in node:
            _walk(item, plain, schemas, seen)
        return
    if not isinstance(node, dict):
        return
    reference = node.get("$ref")
    if isinstance(reference, str) and reference.startswith(PREFIX):
        name = reference.removeprefix(PREFIX)
        if name in JSON_VALUE.values():
            return
        if name in seen:
            if seen[name] != plain:
                raise ValueError(f"component {name} is in request bodies with and without '${{'")
            return
        seen[name] = plain
        _walk(schemas[name], plain, schemas, seen)
        return
    _state(node, plain)
    for key, child in node.items():
        if key in ("properties", "$defs", "patternProperties", "dependentSchemas"):
            for value in child.values():
                _walk(value, plain, schemas, seen)
        elif key not in ("enum", "const", "default", "examples", "required", "not"):
            _walk(child, plain, schemas, seen)


def state_body_rules(document: Schema) -> None:
    """Write the rules into every JSON request body of ``document`` (in place)."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    seen: dict[str, bool] = {}
    for plain in (True, False):
        schemas[JSON_VALUE[plain]] = _json_value(plain)
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            content = operation.get("requestBody", {}).get("content", {})
            body = content.get("application/json", {}).get("schema")
            if body is None:
                continue
            name = str(body.get("$ref", "")).removeprefix(PREFIX)
            _walk(body, name in PLAIN_BODIES, schemas, seen)
            if name in schemas:
                described = schemas[name].get("description", "")
                schemas[name]["description"] = (
                    f"{described}\n\nNo text in it holds a NUL character or a lone surrogate; "
                    f"lists and objects nest at most {MAX_DEPTH} deep."
                ).strip()
