"""UDPipe's REST API (``GET /models``, ``GET|POST /process``): reading its parameters and answering them.

Parameters come from the URL query and, for ``POST``, from an ``application/x-www-form-urlencoded`` or
``multipart/form-data`` body (a part may be ``base64`` or ``quoted-printable``, as Python's email package
writes them). Every value must be UTF-8: a byte that is not is reported with its offset.

``/process`` (UDPipe 2's names and meanings): ``data`` (required, NFC-normalised as UDPipe does);
``model`` (default: the server's first); ``tokenizer`` present = ``data`` is raw text to tokenize and split
(options ``;``-separated: ``presegmented`` = one sentence per line, ``ranges`` = ``TokenRange=START:END`` in
MISC, ``normalized_spaces`` and ``joint_with_parsing`` accepted); else ``input`` = ``conllu`` (default),
``horizontal`` or ``vertical``; ``tagger`` present = UPOS, XPOS, FEATS, LEMMA are predicted; ``parser``
present = HEAD and DEPREL are predicted (g2gt extension: ``parser=enhanced`` also predicts DEPS); ``output`` =
``conllu`` (default), ``horizontal``, ``vertical`` or ``plaintext`` (``plaintext=normalized_spaces``). The
answer is ``{"model", "acknowledgements", "result"}``; every mistake is a 400 with a plain-text message.
"""

from __future__ import annotations

import base64
import quopri
import unicodedata
from typing import Mapping
from urllib.parse import unquote_to_bytes

from .._version import __version__
from .adapter import LoadedModel
from .formats import READERS, WRITERS, RequestError, decode_utf8, surface_tokens
from .service import Options, Work

__all__ = ["parse_urlencoded", "parse_multipart", "ProcessPlan", "plan_process", "finish_process",
           "resolve_model", "models_json"]

TOKENIZER_OPTIONS = ("presegmented", "ranges", "normalized_spaces", "joint_with_parsing")


# --------------------------------------------------------------------------- request bodies
def parse_urlencoded(raw: bytes, what: str) -> dict[str, str]:
    """``a=1&b=%C3%A9`` -> ``{"a": "1", "b": "é"}`` (the last value of a repeated name wins)."""
    out: dict[str, str] = {}
    for pair in raw.split(b"&"):
        if not pair:
            continue
        name_b, _, value_b = pair.partition(b"=")
        name = decode_utf8(unquote_to_bytes(name_b.replace(b"+", b" ")), f"{what}: a parameter name")
        out[name] = decode_utf8(unquote_to_bytes(value_b.replace(b"+", b" ")), f"{what}: parameter {name!r}")
    return out


def parse_multipart(body: bytes, content_type: str) -> dict[str, str]:
    """The named parts of a ``multipart/form-data`` body as text (files included: their content)."""
    from python_multipart.multipart import MultipartParser, parse_options_header

    _, opts = parse_options_header(content_type)
    boundary = opts.get(b"boundary")
    if not boundary:
        raise RequestError("multipart/form-data without a boundary in its Content-Type")
    parts: list[tuple[dict[bytes, bytes], list[bytes]]] = []
    header = [b"", b""]

    def on_part_begin() -> None:
        parts.append(({}, []))

    def on_header_field(data: bytes, start: int, end: int) -> None:
        header[0] += data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        header[1] += data[start:end]

    def on_header_end() -> None:
        parts[-1][0][header[0].strip().lower()] = header[1].strip()
        header[0] = header[1] = b""

    def on_part_data(data: bytes, start: int, end: int) -> None:
        parts[-1][1].append(data[start:end])

    callbacks = {"on_part_begin": on_part_begin, "on_header_field": on_header_field,
                 "on_header_value": on_header_value, "on_header_end": on_header_end, "on_part_data": on_part_data}
    try:
        parser = MultipartParser(boundary, callbacks)
        parser.write(body)
        parser.finalize()
    except Exception as e:  # python-multipart's parse errors
        raise RequestError(f"cannot read the multipart/form-data body: {e}") from None
    out: dict[str, str] = {}
    for headers, chunks in parts:
        _, disp = parse_options_header(headers.get(b"content-disposition", b""))
        name = disp.get(b"name")
        if name is None:
            continue
        key = decode_utf8(name, "multipart/form-data: a part name")
        data = b"".join(chunks)
        cte = headers.get(b"content-transfer-encoding", b"").lower()
        if cte == b"base64":
            try:
                data = base64.b64decode(data)
            except ValueError:
                raise RequestError(f"multipart/form-data: part {key!r} is not valid base64") from None
        elif cte == b"quoted-printable":
            data = quopri.decodestring(data)
        out[key] = decode_utf8(data, f"multipart/form-data: part {key!r}")
    return out


def read_params(query: bytes, method: str, content_type: str, body: bytes) -> dict[str, str]:
    """UDPipe's parameters: the URL query, then (``POST``) the body's fields over them."""
    params = parse_urlencoded(query, "URL query")
    if method != "POST" or not body:
        return params
    ctype = content_type.split(";", 1)[0].strip().lower()
    if ctype == "multipart/form-data":
        params.update(parse_multipart(body, content_type))
    elif ctype == "application/x-www-form-urlencoded":
        params.update(parse_urlencoded(body, "form body"))
    else:
        raise RequestError(f"unsupported Content-Type {content_type or '(none)'!r}; send the parameters as "
                           "multipart/form-data or application/x-www-form-urlencoded")
    return params


# --------------------------------------------------------------------------- models
def resolve_model(models: Mapping[str, LoadedModel], name: str | None) -> LoadedModel:
    """A model by its name (None or ``""``: the default, the first), else by a language code: the first served
    model whose card has that language; :class:`RequestError` listing the models otherwise."""
    if not name:
        return next(iter(models.values()))
    if name in models:
        return models[name]
    by_lang = [m for m in models.values() if m.card.get("language") == name]
    if by_lang:
        return by_lang[0]
    names = list(models)
    listed = ", ".join(f"{n} (default)" if i == 0 else n for i, n in enumerate(names))
    raise RequestError(f"unknown model {name!r}; this server has: {listed}")


def models_json(models: Mapping[str, LoadedModel]) -> dict:
    """``GET /models``: ``{"models": {name: components}, "default_model": name}``."""
    return {"models": {n: m.components for n, m in models.items()}, "default_model": next(iter(models))}


# --------------------------------------------------------------------------- /process
class ProcessPlan:
    """A checked ``/process`` request: what to run (``options``, ``work``; ``options`` None = nothing to
    run, the input is only re-written) and how to write the answer."""

    def __init__(self, model: LoadedModel, data: str, work: Work, options: Options | None, output: str,
                 output_opts: set[str], ranges: bool) -> None:
        self.model, self.data, self.work, self.options = model, data, work, options
        self.output, self.output_opts, self.ranges = output, output_opts, ranges


def _options(value: str) -> set[str]:
    """``"a;b=1;c"`` -> ``{"a", "b", "c"}`` (option values are ignored)."""
    return {part.split("=", 1)[0].strip() for part in value.split(";") if part.strip()}


def plan_process(models: Mapping[str, LoadedModel], params: Mapping[str, str]) -> ProcessPlan:
    """Check the parameters of ``/process`` and read its input (see the module docstring)."""
    if "data" not in params:
        raise RequestError("the parameter 'data' is required (the text or CoNLL-U to process)")
    data = unicodedata.normalize("NFC", params["data"])
    model = resolve_model(models, params.get("model"))
    output, _, out_opts = params.get("output", "conllu").partition("=")
    output = output.strip() or "conllu"
    if output not in WRITERS:
        raise RequestError(f"unknown output format {output!r}; expected one of {', '.join(WRITERS)}")
    tag, parse = "tagger" in params, "parser" in params
    enhanced = parse and "enhanced" in _options(params["parser"])
    if enhanced and not model.has_enhancer:
        raise RequestError(f"parser=enhanced: the model {model.name!r} has no enhanced-UD part")
    ranges = False
    if "tokenizer" in params:
        opts = _options(params["tokenizer"])
        unknown = sorted(opts - set(TOKENIZER_OPTIONS))
        if unknown:
            raise RequestError(f"unknown tokenizer option(s) {', '.join(unknown)}; expected some of "
                               f"{', '.join(TOKENIZER_OPTIONS)}")
        work = Work(text=data, presegmented="presegmented" in opts)
        ranges = "ranges" in opts
        run = True  # the tokenizer is a model too
    else:
        fmt = params.get("input", "conllu").strip() or "conllu"
        if fmt not in READERS:
            raise RequestError(f"unknown input format {fmt!r}; expected one of {', '.join(READERS)} (or send "
                               "the parameter 'tokenizer' to tokenize raw text)")
        work = Work(sentences=READERS[fmt](data), split_long=fmt != "conllu")
        run = tag or parse
    options = Options(model.name, tag, parse, enhanced) if run else None
    return ProcessPlan(model, data, work, options, output, _options(out_opts), ranges)


def finish_process(plan: ProcessPlan, sentences: list) -> dict:
    """The JSON answer of ``/process`` for the processed ``sentences``."""
    if plan.ranges:
        from ..ud.document import token_spans

        for s, spans in zip(sentences, token_spans(sentences, plan.data)):
            surface = {id(tok) for tok, _ in surface_tokens(s)}
            for tok, span in zip(s.rows, spans):
                if span is not None and id(tok) in surface:
                    misc = tok["misc"] if isinstance(tok["misc"], dict) else {}
                    tok["misc"] = {**misc, "TokenRange": f"{span[0]}:{span[1]}"}
    header = [f"# generator = g2gt {__version__}, g2gt serve", f"# g2gt_model = {plan.model.name}"]
    licence = plan.model.card.get("license")
    if licence:
        header.append(f"# g2gt_model_licence = {licence}")
    if plan.output == "plaintext":
        result = WRITERS["plaintext"](sentences, normalized="normalized_spaces" in plan.output_opts)
    else:
        result = WRITERS[plan.output](sentences, header)
    return {"model": plan.model.name, "acknowledgements": plan.model.acknowledgements, "result": result}
