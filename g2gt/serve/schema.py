"""The JSON API's request and response shapes (pydantic models: validation of requests, OpenAPI at ``/docs``).

Responses are :meth:`g2gt.ud.document.Document.to_dict` (plain dicts, no validation cost per request); the
response models here document them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ParseRequest", "ParseResponse", "SentenceOut", "WordOut", "TokenOut", "EdgeOut", "EmptyNodeOut",
           "EntityOut", "MentionOut"]


class ParseRequest(BaseModel):
    """Give exactly one of ``text``, ``sentences`` or ``conllu``."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(None, description="raw text: tokenized and split into sentences by the model")
    sentences: list[list[str]] | None = Field(None, description="pre-tokenized sentences, one list of words each")
    conllu: str | None = Field(None, description="CoNLL-U sentences (FORM is read; the model predicts the rest)")
    model: str | None = Field(None, description="a model name from GET /v1/models (default: the server's first)")
    presegmented: bool = Field(False, description="with text: every line is one sentence")
    enhanced: bool = Field(False, description="also predict the enhanced UD graph (DEPS)")
    coref: bool = Field(False, description="also resolve coreference (the model needs a coref stage, see "
                                           "GET /v1/models): CorefUD Entity= items in MISC and the response's "
                                           "entities; the input is one document unless CoNLL-U input starts "
                                           "others with '# newdoc'")
    svg: bool = Field(False, description="add each sentence's tree drawn as SVG (with coref: mentions of one "
                                         "entity underlined in one colour)")
    return_conllu: bool = Field(False, description="add the whole result as CoNLL-U text")


class WordOut(BaseModel):
    id: int
    text: str = Field(description="the word's form (FORM)")
    lemma: str | None
    upos: str | None
    xpos: str | None
    feats: str | None = Field(description="CoNLL-U FEATS text, e.g. Number=Sing|Person=3")
    head: int | None = Field(description="1-based id of the head word, 0 for the root")
    deprel: str | None
    deps: str | None = Field(description="CoNLL-U DEPS text (enhanced graph), when predicted")
    misc: str | None
    start_char: int | None = Field(description="offset in the document's text (code points); a word of a "
                                               "multiword token has its token's span")
    end_char: int | None


class TokenOut(BaseModel):
    id: str = Field(description="the word id, or a multiword token's range such as 2-3")
    text: str = Field(description="the token as written: text[start_char:end_char]")
    start_char: int | None
    end_char: int | None
    words: list[int] = Field(description="ids of its words")
    misc: str | None = Field(None, description="a multiword token's MISC")


class EdgeOut(BaseModel):
    head: int | str = Field(description="word id, 0 for the root, or an empty node id such as 8.1")
    dependent: int | str
    label: str


class EmptyNodeOut(BaseModel):
    id: str
    text: str
    lemma: str | None
    upos: str | None
    deps: str | None


class SentenceOut(BaseModel):
    id: str | None
    text: str | None
    start_char: int | None = Field(description="offsets into the document's text: the request's text, or the "
                                               "tokens joined by spaces for sentences / conllu input")
    end_char: int | None
    comments: list[str] = Field(description="the sentence's CoNLL-U comment lines")
    tokens: list[TokenOut] = Field(description="every surface token")
    words: list[WordOut]
    enhanced: list[EdgeOut] | None = Field(None, description="when the sentence has DEPS (enhanced=true)")
    empty_nodes: list[EmptyNodeOut] | None = Field(None, description="when there are some")
    svg: str | None = Field(None, description="with svg=true")


class MentionOut(BaseModel):
    sentence: int = Field(description="0-based index of its (first) sentence in sentences")
    start: int = Field(description="its first word's id in that sentence")
    end: int = Field(description="its last word's id (inclusive), in sentence end_sentence")
    end_sentence: int = Field(description="0-based index of its last word's sentence (= sentence unless the "
                                          "mention runs across sentences)")
    text: str = Field(description="its words joined by spaces")
    head: int | None = Field(description="its head word's id when the Entity layout records heads")


class EntityOut(BaseModel):
    document: int = Field(description="0-based index of its document (documents start at '# newdoc')")
    id: str = Field(description="the entity id of its Entity= brackets (unique within a document)")
    type: str = Field(description="the entity type, e.g. person, place, object (empty when not given)")
    mentions: list[MentionOut] = Field(description="in document order; one mention: a singleton")


class ParseResponse(BaseModel):
    """A :class:`g2gt.ud.document.Document`'s ``to_dict()`` (the JSON of ``g2gt parse --format json``)."""

    model: str
    text: str = Field(description="the document's text, which every offset points into")
    sentences: list[SentenceOut]
    entities: list[EntityOut] | None = Field(None, description="with coref=true (when any mention was found): "
                                                              "the entities in order of their first mention")
    conllu: str | None = Field(None, description="with return_conllu=true")
