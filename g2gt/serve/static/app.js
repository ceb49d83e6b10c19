// The g2gt web page: text in, POST /v1/parse, every sentence drawn (the server's SVG tree), a table of the
// CoNLL-U columns, the enhanced graph on request (drawn here), coreference on request (the text with the
// mentions of each entity in one colour), and the result as a CoNLL-U download.
// No external resources: everything comes from this server.
"use strict";

const $ = (id) => document.getElementById(id);
const SVG_NS = "http://www.w3.org/2000/svg";
const COLUMNS = ["ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC"];
// entity colours, the same list as the server's drawings (g2gt.ud.io.svg.PALETTE), then hues 137.5 degrees apart
const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
                 "#bcbd22", "#393b79", "#637939", "#843c39"];
let downloadUrl = null;

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = !message;
}

function setBusy(busy) {
  $("parse").disabled = busy;
  $("status").textContent = busy ? "parsing…" : $("status").textContent;
}

async function loadModels() {
  const response = await fetch("/v1/models");
  const info = await response.json();
  const select = $("model");
  for (const m of info.models) {
    const option = document.createElement("option");
    option.value = m.name;
    option.textContent = m.name;
    option.title = m.description || "";
    option.dataset.enhanced = String(m.enhanced);
    option.dataset.coref = String(Boolean(m.coref));
    select.appendChild(option);
  }
  select.value = info.default_model;
  updateEnhanced();
}

function updateEnhanced() {
  const option = $("model").selectedOptions[0];
  for (const what of ["enhanced", "coref"]) {
    const available = Boolean(option) && option.dataset[what] === "true";
    $(what).disabled = !available;
    if (!available) $(what).checked = false;
  }
}

async function parse(event) {
  event.preventDefault();
  const text = $("text").value;
  showError("");
  if (!text.trim()) {
    showError("Type some text first.");
    return;
  }
  setBusy(true);
  const started = performance.now();
  try {
    const response = await fetch("/v1/parse", {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({text: text, model: $("model").value, enhanced: $("enhanced").checked,
                            coref: $("coref").checked, svg: true, return_conllu: true}),
    });
    const body = await response.text();
    if (!response.ok) throw new Error(`${response.status}: ${body}`);
    const result = JSON.parse(body);
    render(result);
    const words = result.sentences.reduce((n, s) => n + s.words.length, 0);
    $("status").textContent = `${result.sentences.length} sentence(s), ${words} words, ` +
      `${Math.round(performance.now() - started)} ms (${result.model})`;
  } catch (error) {
    $("status").textContent = "";
    showError(error.message);
  } finally {
    $("parse").disabled = false;
  }
}

function render(result) {
  const results = $("results");
  results.replaceChildren();
  if (result.entities) results.appendChild(renderCoref(result));
  result.sentences.forEach((sentence, i) => results.appendChild(renderSentence(sentence, i)));
  if (downloadUrl) URL.revokeObjectURL(downloadUrl);
  downloadUrl = URL.createObjectURL(new Blob([result.conllu || ""], {type: "text/plain;charset=utf-8"}));
  $("download").href = downloadUrl;
  $("download").hidden = false;
}

function element(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

function renderSentence(sentence, index) {
  const section = element("section", "sentence");
  section.dataset.sentence = String(index);
  const title = element("h2");
  title.appendChild(element("span", "sid", `#${sentence.id ?? index + 1}`));
  title.appendChild(document.createTextNode(sentence.text ?? sentence.words.map((w) => w.text).join(" ")));
  section.appendChild(title);
  const tree = element("div", "tree");
  // the server's drawing (g2gt.ud.draw: every text in it is XML-escaped), parsed as SVG, not as HTML
  const doc = new DOMParser().parseFromString(sentence.svg, "image/svg+xml");
  // the heading above already shows the sentence's text: drop the drawing's own title line
  doc.documentElement.querySelectorAll("text.title").forEach((t) => t.remove());
  tree.appendChild(document.importNode(doc.documentElement, true));
  section.appendChild(tree);
  if (sentence.enhanced) {
    section.appendChild(element("h3", "", "Enhanced graph"));
    const graph = element("div", "enhanced");
    graph.appendChild(drawGraph(sentence));
    section.appendChild(graph);
  }
  const columns = element("div", "table-wrap");
  columns.appendChild(renderTable(sentence));
  section.appendChild(columns);
  return section;
}

function renderTable(sentence) {
  const table = element("table", "columns");
  const head = table.createTHead().insertRow();
  for (const c of COLUMNS) head.appendChild(element("th", "", c));
  const body = table.createTBody();
  const tokensAt = new Map(sentence.tokens.filter((t) => t.words.length > 1).map((t) => [t.words[0], t]));
  const emptyAfter = new Map();
  for (const e of sentence.empty_nodes || []) {
    const at = parseInt(e.id, 10);
    if (!emptyAfter.has(at)) emptyAfter.set(at, []);
    emptyAfter.get(at).push(e);
  }
  const row = (cells, className) => {
    const tr = body.insertRow();
    if (className) tr.className = className;
    for (const c of cells) {
      // a zero-width space after each "|" lets long FEATS / DEPS / MISC values wrap
      tr.insertCell().textContent = c === null || c === undefined ? "_" : String(c).replaceAll("|", "|\u200b");
    }
  };
  for (const e of emptyAfter.get(0) || []) row([e.id, e.text, e.lemma, e.upos, null, null, null, null, e.deps, null], "empty");
  for (const w of sentence.words) {
    const t = tokensAt.get(w.id);
    if (t) row([t.id, t.text, null, null, null, null, null, null, null, t.misc], "mwt");
    row([w.id, w.text, w.lemma, w.upos, w.xpos, w.feats, w.head, w.deprel, w.deps, w.misc], "word");
    for (const e of emptyAfter.get(w.id) || []) {
      row([e.id, e.text, e.lemma, e.upos, null, null, null, null, e.deps, null], "empty");
    }
  }
  return table;
}

// ---------------------------------------------------------------- coreference
function entityColor(k) {
  return k < PALETTE.length ? PALETTE[k] : `hsl(${Math.round((k - PALETTE.length) * 137.508 % 360)}, 65%, 40%)`;
}

function colouredEntities(entities) {
  // the entities with two or more mentions, each with its colour (counted per document, as the drawings do)
  const out = [];
  let k = 0, doc = null;
  for (const e of entities) {
    if (e.mentions.length < 2) continue;
    if (e.document !== doc) { k = 0; doc = e.document; }
    out.push({...e, color: entityColor(k++)});
  }
  return out;
}

function mentionSpans(result, entities) {
  // every mention of the coloured entities as a character range [start, end) of result.text
  const tokenOf = result.sentences.map((s) => {
    const m = new Map();
    for (const t of s.tokens) for (const w of t.words) m.set(w, t);
    return m;
  });
  const spans = [];
  for (const e of entities) {
    for (const m of e.mentions) {
      const first = tokenOf[m.sentence]?.get(m.start), last = tokenOf[m.end_sentence]?.get(m.end);
      if (!first || !last || first.start_char === null || last.end_char === null) continue;
      spans.push({start: first.start_char, end: last.end_char, entity: e, text: m.text});
    }
  }
  // outer before inner; a mention that crosses an open one is cut at its end, so the spans nest
  spans.sort((a, b) => a.start - b.start || b.end - a.end);
  return spans;
}

function nestSpans(spans) {
  const root = {start: -Infinity, end: Infinity, children: []};
  const stack = [root];
  for (const s of spans) {
    while (stack.length > 1 && stack[stack.length - 1].end <= s.start) stack.pop();
    const parent = stack[stack.length - 1];
    const node = {...s, end: Math.min(s.end, parent.end), children: []};
    if (node.end <= node.start) continue;
    parent.children.push(node);
    stack.push(node);
  }
  const height = (n) => (n.height = 1 + Math.max(0, ...n.children.map(height)));
  root.children.forEach(height);
  return root;
}

function renderMentions(text, node, from, to) {
  // text[from, to) as DOM nodes, the children of node wrapped in coloured spans
  const frag = document.createDocumentFragment();
  let at = from;
  for (const c of node.children) {
    if (c.start > at) frag.appendChild(document.createTextNode(text.slice(at, c.start)));
    const span = element("span", "mention");
    const e = c.entity;
    span.dataset.entity = e.id;
    span.dataset.document = String(e.document);
    span.title = `entity ${e.id}` + (e.type ? ` (${e.type})` : "") + `: ${e.mentions.length} mentions`;
    span.style.borderBottomColor = e.color;
    span.style.backgroundColor = `color-mix(in srgb, ${e.color} 14%, transparent)`;
    span.style.paddingBottom = `${1 + 4 * (c.height - 1)}px`;  // an outer mention's line below its inner ones'
    span.appendChild(renderMentions(text, c, c.start, c.end));
    frag.appendChild(span);
    at = c.end;
  }
  if (to > at) frag.appendChild(document.createTextNode(text.slice(at, to)));
  return frag;
}

function renderCoref(result) {
  const section = element("section", "coref");
  section.appendChild(element("h2", "", "Coreference"));
  const entities = colouredEntities(result.entities);
  const shown = element("p", "coref-text");
  shown.appendChild(renderMentions(result.text, nestSpans(mentionSpans(result, entities)), 0, result.text.length));
  section.appendChild(shown);
  const list = element("ul", "entities");
  for (const e of entities) {
    const item = element("li");
    const chip = element("span", "chip", e.id);
    chip.style.backgroundColor = e.color;
    item.appendChild(chip);
    item.appendChild(document.createTextNode(` ${e.type || "entity"}: ${e.mentions.map((m) => m.text).join(" · ")}`));
    list.appendChild(item);
  }
  section.appendChild(list);
  const single = result.entities.length - entities.length;
  const singles = single === 1 ? "1 entity with one mention" : `${single} entities with one mention`;
  section.appendChild(element("p", "note", entities.length ? (single ? `${singles} (not coloured)` : "") :
    `no entity with two or more mentions (${singles})`));
  return section;
}

// ---------------------------------------------------------------- the enhanced graph
function svgEl(tag, attrs, text) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

function nodeKey(id) {
  const [whole, part] = String(id).split(".");
  return parseInt(whole, 10) + (part ? parseInt(part, 10) / 1000 : 0);
}

function drawGraph(sentence) {
  // nodes: words and empty nodes in id order; arcs above them from head to dependent, stacked by span
  const nodes = sentence.words.map((w) => ({id: String(w.id), form: w.text}))
    .concat((sentence.empty_nodes || []).map((e) => ({id: e.id, form: e.text + " (" + e.id + ")"})))
    .sort((a, b) => nodeKey(a.id) - nodeKey(b.id));
  const x = new Map();
  let at = 20;
  for (const n of nodes) {
    const width = Math.max(40, n.form.length * 8 + 16);
    x.set(n.id, at + width / 2);
    at += width;
  }
  const edges = (sentence.enhanced || []).map((e) => ({head: String(e.head), dep: String(e.dependent), label: e.label}));
  const arcs = edges.filter((e) => e.head !== "0" && x.has(e.head) && x.has(e.dep))
    .map((e) => ({...e, lo: Math.min(x.get(e.head), x.get(e.dep)), hi: Math.max(x.get(e.head), x.get(e.dep))}))
    .sort((a, b) => (a.hi - a.lo) - (b.hi - b.lo));
  for (const [i, a] of arcs.entries()) {
    const inner = arcs.slice(0, i).filter((b) => b.lo >= a.lo && b.hi <= a.hi);
    a.level = 1 + Math.max(0, ...inner.map((b) => b.level));
  }
  const top = Math.max(1, ...arcs.map((a) => a.level));
  const base = 30 + top * 26;
  const svg = svgEl("svg", {width: at + 20, height: base + 40, class: "graph-enhanced"});
  svg.appendChild(svgEl("rect", {x: 0, y: 0, width: at + 20, height: base + 40, fill: "white"}));
  for (const e of edges.filter((d) => d.head === "0" && x.has(d.dep))) {
    svg.appendChild(svgEl("path", {d: `M ${x.get(e.dep)} 12 L ${x.get(e.dep)} ${base}`, stroke: "#2f6db3",
                                    fill: "none", class: "arc root"}));
    svg.appendChild(svgEl("text", {x: x.get(e.dep) + 4, y: 14, "font-size": 11, fill: "#2f6db3", class: "label"},
                          e.label));
  }
  for (const a of arcs) {
    const xh = x.get(a.head), xd = x.get(a.dep), peak = base - a.level * 26 * 4 / 3;
    svg.appendChild(svgEl("path", {d: `M ${xh} ${base} C ${xh} ${peak}, ${xd} ${peak}, ${xd} ${base}`,
                                    stroke: "#2f6db3", fill: "none", class: "arc"}));
    svg.appendChild(svgEl("circle", {cx: xd, cy: base, r: 2.5, fill: "#2f6db3"}));
    svg.appendChild(svgEl("text", {x: (xh + xd) / 2, y: base - a.level * 26 + 4, "font-size": 11, fill: "#a0301c",
                                    "text-anchor": "middle", class: "label"}, a.label));
  }
  for (const n of nodes) {
    svg.appendChild(svgEl("text", {x: x.get(n.id), y: base + 20, "font-size": 14, "text-anchor": "middle",
                                    class: "word"}, n.form));
  }
  return svg;
}

$("form").addEventListener("submit", parse);
$("model").addEventListener("change", updateEnhanced);
loadModels().catch((error) => showError("cannot list the models: " + error.message));
