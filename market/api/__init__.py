"""The HTTP API under ``/api/v1`` and the fix-ups its OpenAPI document needs."""

from __future__ import annotations

from apiflask import APIFlask
from pydantic import TypeAdapter

from market.api import account, subagents, usage
from market.problems import PROBLEM_SCHEMA


def register_api(app: APIFlask, prefix: str) -> None:
    app.register_blueprint(subagents.bp, url_prefix=prefix)
    app.register_blueprint(account.bp, url_prefix=prefix)
    app.register_blueprint(usage.bp, url_prefix=prefix)
    app.spec_processor(lambda spec: complete_spec(spec, prefix))


def complete_spec(spec: dict, prefix: str) -> dict:
    """Add what APIFlask leaves out: bodies parsed by hand (JSON or zip), bearer auth, the
    400/401/403/404/409/413 problems every operation may return."""
    spec.setdefault("components", {}).setdefault("securitySchemes", {})["bearer"] = {
        "type": "http",
        "scheme": "bearer",
        "description": "`sprig_…` API token",
    }
    spec["security"] = [{}, {"bearer": []}]
    schemas = spec["components"].setdefault("schemas", {})
    schemas["Problem"] = PROBLEM_SCHEMA
    problem_ref = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for (path, method), model in subagents.BUNDLE_BODIES.items():
        operation = spec["paths"][prefix + path][method]
        json_schema = TypeAdapter(model).json_schema(ref_template="#/components/schemas/{model}")
        for name, definition in json_schema.pop("$defs", {}).items():
            schemas.setdefault(name, definition)
        schemas[model.__name__] = json_schema
        operation["requestBody"] = {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}},
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "required": ["metadata", "bundle"],
                        "properties": {
                            "metadata": {
                                "type": "string",
                                "description": f"JSON of {model.__name__} without `bundle`",
                            },
                            "bundle": {"type": "string", "format": "binary"},
                        },
                    }
                },
            },
        }
    for path_item in spec["paths"].values():
        for method, operation in path_item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            body = operation.get("requestBody")
            if body is not None:
                body["required"] = True
            responses = operation.setdefault("responses", {})
            for status, description in (
                ("400", "Malformed request"),
                ("401", "Token missing or invalid"),
                ("403", "Not allowed"),
                ("404", "Not found (or not visible to the caller)"),
                ("409", "Conflicts with the current state"),
                ("413", "Too large"),
                ("422", "Invalid input"),
                ("503", "Temporarily unavailable"),
            ):
                responses.setdefault(status, {"description": description, "content": problem_ref})
            if "422" in responses:
                responses["422"]["content"] = problem_ref
    return spec
