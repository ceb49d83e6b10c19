"""The JSON API's request and response shapes (pydantic models: validation of requests, OpenAPI at ``/docs``).

Responses are built as plain dicts by :mod:`g2gt.serve.jsonout` (no validation cost per request); the
response models here document them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ParseRequest", "ParseResponse", "SentenceOut", "WordOut", "TokenOut", "EdgeOut", "EmptyNodeOut"]


class ParseRequest(BaseModel):
    """Give exactly one of ``text``, ``sentences`` or ``conllu``."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(None, description="raw text: tokenized and split into sentences by the model")
    sentences: list[list[str]] | None = Field(None, description="pre-tokenized sentences, one list of words each")
    conllu: str | None = Field(None, description="CoNLL-U sentences (FORM is read; the model predicts the rest)")
    model: str | None = Field(None, description="a model name from GET /v1/models (default: the server's first)")
    presegmented: bool = Field(False, description="with text: every line is one sentence")
    enhanced: bool = Field(False, description="also predict the enhanced UD graph (DEPS)")
    svg: bool = Field(False, description="add each sentence's tree drawn as SVG")
    return_conllu: bool = Field(False, description="add the whole result as CoNLL-U text")


class WordOut(BaseModel):
    id: int
    form: str
    lemma: str | None
    upos: str | None
    xpos: str | None
    feats: str | None = Field(description="CoNLL-U FEATS text, e.g. Number=Sing|Person=3")
    head: int | None = Field(description="1-based id of the head word, 0 for the root")
    deprel: str | None
    deps: str | None = Field(description="CoNLL-U DEPS text (enhanced graph), when predicted")
    misc: str | None
    start: int | None = Field(description="character offset in the text (code points); null if not found")
    end: int | None


class TokenOut(BaseModel):
    id: str = Field(description="multiword token range, e.g. 2-3")
    form: str
    words: list[int]
    start: int | None
    end: int | None


class EdgeOut(BaseModel):
    head: int | str = Field(description="word id, 0 for the root, or an empty node id such as 8.1")
    dependent: int | str
    label: str


class EmptyNodeOut(BaseModel):
    id: str
    form: str
    lemma: str | None
    upos: str | None
    deps: str | None


class SentenceOut(BaseModel):
    id: str | None
    text: str | None
    start: int | None = Field(description="offsets into the request's text (text input) or into the sentence's "
                                          "own text (sentences / conllu input)")
    end: int | None
    words: list[WordOut]
    tokens: list[TokenOut] = Field(description="multiword tokens only")
    enhanced: list[EdgeOut] | None = Field(None, description="with enhanced=true")
    empty_nodes: list[EmptyNodeOut] | None = Field(None, description="with enhanced=true")
    svg: str | None = Field(None, description="with svg=true")


class ParseResponse(BaseModel):
    model: str
    sentences: list[SentenceOut]
    conllu: str | None = Field(None, description="with return_conllu=true")
