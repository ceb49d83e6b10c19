// Render the \( ... \) and \[ ... \] spans that pymdownx.arithmatex leaves, with the bundled KaTeX.
function renderMath() {
  document.querySelectorAll(".arithmatex").forEach(function (el) {
    renderMathInElement(el, {
      delimiters: [{left: "\\(", right: "\\)", display: false}, {left: "\\[", right: "\\]", display: true}],
      throwOnError: false,
    });
  });
}
if (typeof document$ !== "undefined") { document$.subscribe(renderMath); }  // Material's instant loading
else { document.addEventListener("DOMContentLoaded", renderMath); }
