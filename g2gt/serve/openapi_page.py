"""The server's ``/docs`` page: its OpenAPI schema as one plain HTML page, with no external resources.

FastAPI's default ``/docs`` loads Swagger UI from a CDN and is blank without network access. This page is
rendered on the server from ``app.openapi()``: every route with its method, summary, description, query and
body parameters and responses, plus a link to the machine-readable ``/openapi.json``. No script, no
stylesheet or font from anywhere else, so it works offline.
"""

from __future__ import annotations

import html
import json
from typing import Any, Mapping

__all__ = ["openapi_html"]

_STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
h2 { border-top: 1px solid #ccc; padding-top: 1rem; }
code, pre { font: 13px ui-monospace, monospace; background: #f4f4f4; }
pre { padding: .6rem; overflow-x: auto; }
.method { font-weight: bold; text-transform: uppercase; margin-right: .5rem; }
table { border-collapse: collapse; } td, th { border: 1px solid #ddd; padding: .2rem .5rem; text-align: left; }
"""


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _resolve(schema: Mapping[str, Any], spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow one local ``$ref`` (``#/components/schemas/Name``); other schemas come back as they are."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = spec
        for part in ref[2:].split("/"):
            node = node.get(part, {}) if isinstance(node, Mapping) else {}
        return node if isinstance(node, Mapping) else {}
    return schema


def _type_name(schema: Mapping[str, Any]) -> str:
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " | ".join(_type_name(s) for s in schema["anyOf"])
    if schema.get("type") == "array":
        return f"array of {_type_name(schema.get('items', {}))}"
    return str(schema.get("type", "any"))


def _fields_table(schema: Mapping[str, Any], spec: Mapping[str, Any]) -> str:
    schema = _resolve(schema, spec)
    props = schema.get("properties") or {}
    if not props:
        return f"<p><code>{_esc(_type_name(schema))}</code></p>"
    required = set(schema.get("required") or ())
    rows = "".join(
        f"<tr><td><code>{_esc(name)}</code>{' (required)' if name in required else ''}</td>"
        f"<td><code>{_esc(_type_name(prop))}</code></td><td>{_esc(prop.get('description', ''))}</td></tr>"
        for name, prop in props.items())
    return f"<table><tr><th>field</th><th>type</th><th>description</th></tr>{rows}</table>"


def _operation(path: str, method: str, op: Mapping[str, Any], spec: Mapping[str, Any]) -> str:
    parts = [f"<h3><span class=method>{_esc(method)}</span><code>{_esc(path)}</code></h3>"]
    if op.get("summary"):
        parts.append(f"<p><b>{_esc(op['summary'])}</b></p>")
    if op.get("description"):
        parts.append(f"<pre>{_esc(op['description'])}</pre>")
    params = op.get("parameters") or []
    if params:
        rows = "".join(
            f"<tr><td><code>{_esc(p.get('name'))}</code></td><td>{_esc(p.get('in'))}</td>"
            f"<td><code>{_esc(_type_name(p.get('schema', {})))}</code></td>"
            f"<td>{'yes' if p.get('required') else 'no'}</td></tr>" for p in params)
        parts.append("<p>Parameters:</p><table><tr><th>name</th><th>in</th><th>type</th><th>required</th></tr>"
                     f"{rows}</table>")
    body = (op.get("requestBody") or {}).get("content") or {}
    for media, content in body.items():
        parts.append(f"<p>Request body (<code>{_esc(media)}</code>):</p>")
        parts.append(_fields_table(content.get("schema", {}), spec))
    for status, response in (op.get("responses") or {}).items():
        parts.append(f"<p>Response <code>{_esc(status)}</code>: {_esc(response.get('description', ''))}</p>")
    return "\n".join(parts)


def openapi_html(spec: Mapping[str, Any]) -> str:
    """The whole page for an OpenAPI ``spec`` (the dict ``FastAPI.openapi()`` returns), as an HTML string."""
    info = spec.get("info") or {}
    title = f"{info.get('title', 'API')} {info.get('version', '')}".strip()
    ops = [_operation(path, method, op, spec)
           for path, item in (spec.get("paths") or {}).items()
           for method, op in item.items() if isinstance(op, Mapping)]
    schemas = spec.get("components", {}).get("schemas", {})
    models = "".join(f"<h3 id='{_esc(name)}'><code>{_esc(name)}</code></h3>{_fields_table(s, spec)}"
                     for name, s in schemas.items())
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{_esc(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{_esc(title)}</h1><p>{_esc(info.get('description', ''))}</p>"
        "<p>The machine-readable schema: <a href='/openapi.json'>/openapi.json</a>. The web page: "
        "<a href='/'>/</a>.</p>"
        "<h2>Routes</h2>" + "\n".join(ops) + "<h2>Schemas</h2>" + models +
        f"<details><summary>Raw OpenAPI schema</summary><pre>{_esc(json.dumps(spec, indent=2))}</pre></details>"
        "</body></html>")
