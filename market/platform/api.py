"""The fix-ups the OpenAPI document of the HTTP API under ``/api/v1`` needs."""

from __future__ import annotations

import copy
import re

from flask import Flask
from pydantic import TypeAdapter

from market.platform.problems import PROBLEM_SCHEMA

NO_NUL = "^[^\\u0000]*$"


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
LINKS = {
    ("/subagents", "post"): _SUBAGENT_LINKS,
    ("/subagents/{subagent_id}/forks", "post"): _SUBAGENT_LINKS,
    ("/subagents/{subagent_id}/versions", "post"): {
        "GetBundle": (
            "/subagents/{subagent_id}/versions/{version_id}/bundle",
            "get",
            {
                "subagent_id": "$request.path.subagent_id",
                "version_id": "$response.body#/id",
            },
        ),
    },
    ("/exports", "post"): {
        "GetExport": ("/exports/{run_id}", "get", {"run_id": "$response.body#/id"}),
    },
}
# Operations with a per-client rate limit (a 429 with Retry-After).
RATE_LIMITED = {("/events", "post")}
# What an export file download really is, by the file's kind.
EXPORT_FILE_TYPES = (
    "application/vnd.apache.parquet",
    "application/jsonl",
    "text/markdown",
    "application/json",
)


_RULE_VARIABLE = re.compile(r"<(?:[^:<>]+:)?([^:<>]+)>")


def optional_bodies(app: Flask) -> set[tuple[str, str]]:
    """(OpenAPI path, method) of every operation whose body only carries options
    (``api_deps.body_optional``): the document says such a body may be left out."""
    found = set()
    for rule in app.url_map.iter_rules():
        if getattr(app.view_functions.get(rule.endpoint), "sprig_body_optional", False):
            path = _RULE_VARIABLE.sub(r"{\1}", rule.rule)
            found |= {(path, method.lower()) for method in rule.methods - {"HEAD", "OPTIONS"}}
    return found


def _operation_ref(path: str, method: str) -> str:
    return "#/paths/" + path.replace("~", "~0").replace("/", "~1") + "/" + method


def complete_spec(
    spec: dict, prefix: str, bundle_bodies: dict, optional: set[tuple[str, str]] = frozenset()
) -> dict:
    """Add what APIFlask leaves out: bodies parsed by hand (JSON or zip), bearer auth, the
    400/401/403/404/409/413 problems every operation may return. ``bundle_bodies`` maps
    (path, method) to the model of each body that carries a bundle (JSON or a zip upload);
    ``optional`` names the operations whose body may be left out (full paths)."""
    spec.setdefault("components", {}).setdefault("securitySchemes", {})["bearer"] = {
        "type": "http",
        "scheme": "bearer",
        "description": "`sprig_…` API token",
    }
    spec["security"] = [{}, {"bearer": []}]
    schemas = spec["components"].setdefault("schemas", {})
    schemas["Problem"] = PROBLEM_SCHEMA
    problem_ref = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for (path, method), model in bundle_bodies.items():
        operation = spec["paths"][prefix + path][method]
        json_schema = TypeAdapter(model).json_schema(ref_template="#/components/schemas/{model}")
        for name, definition in json_schema.pop("$defs", {}).items():
            schemas.setdefault(name, definition)
        # The model lets `bundle` be absent because a zip upload carries it beside the JSON;
        # the document says what each content type really needs: a JSON body must have the
        # bundle, multipart metadata must not (read_body_with_bundle).
        metadata = copy.deepcopy(json_schema)
        metadata["properties"].pop("bundle")
        metadata["title"] = f"{model.__name__}Metadata"
        json_schema["properties"]["bundle"] = {
            "$ref": "#/components/schemas/BundleIn",
            "description": "the files (or send them as a zip, multipart)",
        }
        json_schema["required"] = [*json_schema.get("required", []), "bundle"]
        schemas[model.__name__] = json_schema
        schemas[metadata["title"]] = metadata
        operation["requestBody"] = {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}},
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
            for parameter in operation.get("parameters", []):
                _forbid_nul(parameter.get("schema", {}))
            body = operation.get("requestBody")
            if body is not None:
                body["required"] = (path, method) not in optional
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
