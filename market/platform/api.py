"""The fix-ups the OpenAPI document of the HTTP API under ``/api/v1`` needs."""

from __future__ import annotations

import re
from dataclasses import dataclass

from flask import Flask
from pydantic import TypeAdapter
from werkzeug.routing import IntegerConverter

from market.platform.problems import PROBLEM_SCHEMA

NO_NUL = "^[^\\u0000]*$"
# Where the HTTP API lives: every address under it answers problem documents, never pages.
API_PREFIX = "/api/v1"


def _forbid_nul(schema: dict) -> None:
    """Say in the document what every text input enforces: no NUL characters."""
    if not isinstance(schema, dict):
        return
    free_text = schema.get("type") == "string" and not {"pattern", "format", "enum"} & set(schema)
    if free_text:
        schema["pattern"] = NO_NUL
    for key in ("properties", "$defs"):
        for child in schema.get(key, {}).values():
            _forbid_nul(child)
    for key in ("items", "additionalProperties"):
        _forbid_nul(schema.get(key))
    for key in ("anyOf", "oneOf", "allOf"):
        for child in schema.get(key, []):
            _forbid_nul(child)


# OpenAPI links: where an answer's ids lead (clients and stateful fuzzers follow them).
# source (path, method) → link name → (target path, method, parameters).
_SUBAGENT = {"subagent_id": "$response.body#/id"}
_SUBAGENT_LINKS = {
    "GetSubAgent": ("/subagents/{subagent_id}", "get", _SUBAGENT),
    "ListVersions": ("/subagents/{subagent_id}/versions", "get", _SUBAGENT),
    "GetLineage": ("/subagents/{subagent_id}/lineage", "get", _SUBAGENT),
    "Fork": ("/subagents/{subagent_id}/forks", "post", _SUBAGENT),
    "Install": ("/subagents/{subagent_id}/install", "post", _SUBAGENT),
    "GetLatestBundle": (
        "/subagents/{subagent_id}/versions/{version_id}/bundle",
        "get",
        {**_SUBAGENT, "version_id": "$response.body#/latest_version/id"},
    ),
}
_VERSION_LINKS = {
    "GetBundle": (
        "/subagents/{subagent_id}/versions/{version_id}/bundle",
        "get",
        {
            "subagent_id": "$request.path.subagent_id",
            "version_id": "$response.body#/id",
        },
    ),
}
LINKS = {
    ("/subagents", "post"): _SUBAGENT_LINKS,
    ("/subagents/zip", "post"): _SUBAGENT_LINKS,
    ("/subagents/{subagent_id}/forks", "post"): _SUBAGENT_LINKS,
    ("/subagents/{subagent_id}/forks/zip", "post"): _SUBAGENT_LINKS,
    ("/subagents/{subagent_id}/versions", "post"): _VERSION_LINKS,
    ("/subagents/{subagent_id}/versions/zip", "post"): _VERSION_LINKS,
    ("/exports", "post"): {
        "GetExport": ("/exports/{run_id}", "get", {"run_id": "$response.body#/id"}),
    },
}
# Operations with a per-client rate limit (a 429 with Retry-After; market/platform/limits.py).
# Any operation may also answer 429 to an address that failed too many token checks.
RATE_LIMITED = {
    ("/events", "post"),
    ("/subagents", "post"),
    ("/subagents/zip", "post"),
    ("/subagents/{subagent_id}/versions", "post"),
    ("/subagents/{subagent_id}/versions/zip", "post"),
    ("/subagents/{subagent_id}/forks", "post"),
    ("/subagents/{subagent_id}/forks/zip", "post"),
    ("/subagents/{subagent_id}/fork-requests", "post"),
    ("/subagents", "get"),
    ("/suggestions", "post"),
    ("/recommendations", "post"),
}
# What an export file download really is, by the file's kind.
EXPORT_FILE_TYPES = (
    "application/vnd.apache.parquet",
    "application/jsonl",
    "text/markdown",
    "application/json",
)


_RULE_VARIABLE = re.compile(r"<(?:[^:<>]+:)?([^:<>]+)>")


@dataclass(frozen=True)
class RouteFacts:
    """What the document cannot learn from APIFlask about one operation, read from its rule."""

    view_name: str  # the operationId's source when the view names none
    body_optional: bool
    path_parameters: dict[str, dict]


def _converter_schema(converter) -> dict:
    """The JSON Schema of the values a path converter matches (anything else is a 404)."""
    if isinstance(converter, IntegerConverter):
        schema: dict = {"type": "integer"}
        low = converter.min if converter.signed else max(converter.min or 0, 0)
        if low is not None:
            schema["minimum"] = low
        if converter.max is not None:
            schema["maximum"] = converter.max
        return schema
    return {"type": "string"}


def route_facts(app: Flask) -> dict[tuple[str, str], RouteFacts]:
    """(OpenAPI path, method) → its view's name, whether its body only carries options
    (``api_deps.body_optional``: the document says it may be left out), and the schema of
    each path parameter as its converter matches it (``<int:…>`` ids are integers)."""
    found = {}
    for rule in app.url_map.iter_rules():
        view = app.view_functions.get(rule.endpoint)
        path = _RULE_VARIABLE.sub(r"{\1}", rule.rule)
        facts = RouteFacts(
            view_name=rule.endpoint.rsplit(".", 1)[-1],
            body_optional=getattr(view, "sprig_body_optional", False),
            path_parameters={
                name: _converter_schema(converter) for name, converter in rule._converters.items()
            },
        )
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            found[(path, method.lower())] = facts
    return found


def _camel_case(name: str) -> str:
    """An operationId for a view that names none (``list_tokens`` → ``listTokens``)."""
    first, *rest = name.split("_")
    return first + "".join(word.capitalize() for word in rest)


def _rewrite_refs(node, renamed: dict[str, str]) -> None:
    prefix = "#/components/schemas/"
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.removeprefix(prefix) in renamed:
            node["$ref"] = prefix + renamed[ref.removeprefix(prefix)]
        for value in node.values():
            _rewrite_refs(value, renamed)
    elif isinstance(node, list):
        for value in node:
            _rewrite_refs(value, renamed)


def _hoist_nested_components(spec: dict) -> None:
    """APIFlask files each model nested in another under its parent (``Page.AuthorOut``,
    ``Lineage.AuthorOut``…): copies with one title, which client generators refuse as
    duplicate models. Each becomes the one component of its own name, referenced by ``$ref``
    everywhere it nests. Two different models of one name would make two client classes of
    one name: that is refused here, where the suite sees it."""
    schemas = spec["components"]["schemas"]
    renamed = {name: name.rpartition(".")[2] for name in schemas if "." in name}
    _rewrite_refs(spec, renamed)
    for name, short in renamed.items():
        nested = schemas.pop(name)
        kept = schemas.setdefault(short, nested)
        if kept != nested:
            raise ValueError(f"two different models are both named {short!r} ({name})")


def _operation_ref(path: str, method: str) -> str:
    return "#/paths/" + path.replace("~", "~0").replace("/", "~1") + "/" + method


def _component(schemas: dict, model) -> dict:
    """``model``'s JSON Schema, the models it nests filed as components of their own."""
    json_schema = TypeAdapter(model).json_schema(ref_template="#/components/schemas/{model}")
    for name, definition in json_schema.pop("$defs", {}).items():
        schemas.setdefault(name, definition)
    return json_schema


def complete_spec(
    spec: dict,
    prefix: str,
    routes: dict[tuple[str, str], RouteFacts],
    json_bodies: dict,
    bundle_bodies: dict,
    zip_uploads: dict,
) -> dict:
    """Add what APIFlask leaves out: bodies parsed by hand (JSON or zip), bearer auth, the
    400/401/403/404/409/413 problems every operation may return, an ``operationId`` on every
    operation, integer path ids, and one component per model. ``routes`` is ``route_facts``;
    the other maps go from (path, method) to the model of a body read by hand: plain JSON
    (``json_bodies``), JSON carrying a bundle (``bundle_bodies``), or a multipart zip upload
    with its JSON ``metadata`` (``zip_uploads``). One content type per operation: client
    generators make one typed call of each operation, and some cannot make it for two."""
    spec.setdefault("components", {}).setdefault("securitySchemes", {})["bearer"] = {
        "type": "http",
        "scheme": "bearer",
        "description": "`sprig_…` API token",
    }
    spec["security"] = [{}, {"bearer": []}]
    schemas = spec["components"].setdefault("schemas", {})
    _hoist_nested_components(spec)
    schemas["Problem"] = PROBLEM_SCHEMA
    problem_ref = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for (path, method), model in json_bodies.items():
        schemas[model.__name__] = _component(schemas, model)
        spec["paths"][prefix + path][method]["requestBody"] = {
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}
            },
        }
    for (path, method), model in bundle_bodies.items():
        # The model lets `bundle` be absent because a zip upload carries it beside the JSON;
        # the document says what a JSON body really needs: the bundle (read_body_with_bundle).
        json_schema = _component(schemas, model)
        json_schema["properties"]["bundle"] = {
            "$ref": "#/components/schemas/BundleIn",
            "description": "the files (or upload them as a zip: the operation ending in Zip)",
        }
        json_schema["required"] = [*json_schema.get("required", []), "bundle"]
        schemas[model.__name__] = json_schema
        spec["paths"][prefix + path][method]["requestBody"] = {
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}
            },
        }
    for (path, method), model in zip_uploads.items():
        # Multipart metadata is the JSON body without the bundle: the zip carries it.
        metadata = _component(schemas, model)
        metadata["properties"].pop("bundle")
        metadata["title"] = f"{model.__name__}Metadata"
        schemas[metadata["title"]] = metadata
        spec["paths"][prefix + path][method]["requestBody"] = {
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["metadata", "bundle"],
                        "properties": {
                            "metadata": {"$ref": f"#/components/schemas/{metadata['title']}"},
                            "bundle": {"type": "string", "format": "binary"},
                        },
                    },
                    "encoding": {"metadata": {"contentType": "application/json"}},
                },
            },
        }
    for name, schema in schemas.items():
        # request bodies (and multipart metadata) only: responses may echo what was sent
        if name.endswith(("In", "InMetadata")):
            _forbid_nul(schema)
    for path, path_item in spec["paths"].items():
        for method, operation in path_item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            facts = routes[(path, method)]
            operation.setdefault("operationId", _camel_case(facts.view_name))
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path" and parameter["name"] in facts.path_parameters:
                    parameter["schema"] = facts.path_parameters[parameter["name"]]
                _forbid_nul(parameter.get("schema", {}))
            body = operation.get("requestBody")
            if body is not None:
                body["required"] = not facts.body_optional
            responses = operation.setdefault("responses", {})
            problems = [
                ("400", "Malformed request (also: a body that is JSON `null`, or nested too deep)"),
                ("401", "Token missing or invalid"),
                ("403", "Not allowed"),
                ("404", "Not found (or not visible to the caller)"),
                ("409", "Conflicts with the current state"),
                ("413", "Too large"),
                ("414", "URL longer than 4,096 bytes"),
                ("422", "Invalid input"),
                ("503", "Temporarily unavailable"),
            ]
            if body is not None:
                problems.append(("415", "The body is not of a type this operation reads"))
            if (path.removeprefix(prefix), method) in RATE_LIMITED:
                problems.append(("429", "Rate limit reached; retry after `Retry-After` seconds"))
            else:
                problems.append(
                    ("429", "Too many failed token checks from this address; see `Retry-After`")
                )
            for status, description in problems:
                responses.setdefault(status, {"description": description})
                # Every error is a problem document, whatever APIFlask assumed.
                responses[status]["content"] = problem_ref
            created = responses.get("201")
            if method == "post" and created is not None and "content" in created:
                # Idempotent writes answer 200 with the same body when nothing new was made.
                responses.setdefault(
                    "200", {"description": "already existed", "content": created["content"]}
                )
    bundle_get = (
        spec["paths"]
        .get(prefix + "/subagents/{subagent_id}/versions/{version_id}/bundle", {})
        .get("get")
    )
    if bundle_get is not None:
        bundle_get["responses"]["200"]["content"]["application/zip"] = {
            "schema": {"type": "string", "format": "binary"}
        }
    export_file = spec["paths"].get(prefix + "/exports/{run_id}/files/{path}", {}).get("get")
    if export_file is not None:
        export_file["responses"]["200"]["content"] = {
            media_type: {"schema": {"type": "string", "format": "binary"}}
            for media_type in EXPORT_FILE_TYPES
        }
    for (path, method), links in LINKS.items():
        operation = spec["paths"].get(prefix + path, {}).get(method)
        if operation is None:
            continue
        for status in ("200", "201", "202"):
            if status in operation["responses"]:
                operation["responses"][status]["links"] = {
                    name: {
                        "operationRef": _operation_ref(prefix + target, verb),
                        "parameters": parameters,
                    }
                    for name, (target, verb, parameters) in links.items()
                }
    return spec
