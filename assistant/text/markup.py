"""Readable plain text from abstracts that carry markdown and LaTeX.

Conference sites keep `*emphasis*`, `[links](url)` and `$\\Phi_\\textrm{Flow}$`
in abstracts; the same abstract elsewhere is plain text. `clean_markup` makes
the first readable for embedding and display, and lets `corpus.text_key`
compare two copies of one abstract. `inert` makes a chat model's text safe for
any client that renders Markdown or HTML.
"""

from __future__ import annotations

import re
import unicodedata

_LINK = re.compile(r"\[([^\]]*)\]\((?:[^()\s]|\([^()]*\))*\)")
_MATH = re.compile(r"\$\$?([^$]+?)\$\$?")
_WRAPPER = re.compile(r"\\(?:textrm|textbf|textit|texttt|text|mathrm|mathbf|mathit|mathcal|mathbb|mathsf|operatorname|bf|it|rm|emph|boldsymbol)\s*\{([^{}]*)\}")
_ACCENT = re.compile(r"\\(widetilde|tilde|widehat|hat|bar|overline)\s*\{([^{}]*)\}")  # "\\widetilde{O}": "Õ"
_MARKS = {"widetilde": "\u0303", "tilde": "\u0303", "widehat": "\u0302", "hat": "\u0302", "bar": "\u0304", "overline": "\u0304"}
_COMMAND = re.compile(r"\\([A-Za-z]+)")
_EMPHASIS = re.compile(r"(?<![\w*])(\*\*|\*|__)(?=\S)(.+?)(?<=\S)\1(?![\w*])")
# Letters in bold or italics inside a word, spelling where a name comes from: "gradi**E**nt", "-*C*ritic", "Rein*for*mer"
# (not "2*3*4").
_LETTERS = re.compile(
    r"\*\*([^\s*](?:[^*]*?[^\s*])?)\*\*(?=\w)|(?<=\w)\*\*([^\s*](?:[^*]*?[^\s*])?)\*\*|(?<![\w*])\*([A-Za-z]{1,3})\*(?=[a-z])|(?<=[A-Za-z])\*([A-Za-z]{1,4})\*(?=[A-Za-z])"
)
GREEK_LETTERS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu", "xi",
                 "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega")  # as LaTeX names them
_GREEK = {
    name: unicodedata.lookup(f"GREEK {'CAPITAL' if name[0].isupper() else 'SMALL'} LETTER {name.upper().replace('LAMBDA', 'LAMDA')}")
    for name in [*GREEK_LETTERS, "Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Upsilon", "Phi", "Psi", "Omega"]
}
_SYMBOLS = {"times": "×", "cdot": "·", "leq": "≤", "geq": "≥", "le": "≤", "ge": "≥", "approx": "≈", "infty": "∞", "sim": "~", "ell": "ℓ",
            "to": "→", "rightarrow": "→", "pm": "±", "neq": "≠", "in": "∈", "log": "log", "sqrt": "√", "sum": "Σ", "mathcal": ""}


def _math(match: re.Match[str]) -> str:
    body = match.group(1)
    while True:
        unwrapped = _ACCENT.sub(_accented, _WRAPPER.sub(r"\1", body))
        if unwrapped == body:
            break
        body = unwrapped
    body = _COMMAND.sub(lambda m: _GREEK.get(m.group(1), _SYMBOLS.get(m.group(1), m.group(1))), body)
    return body.replace("{", "").replace("}", "").replace("\\", "").strip()


def _accented(match: re.Match[str]) -> str:
    """One letter under an accent as that letter ("\\widetilde{O}" → "Õ"); a longer body as it is."""
    body = match.group(2).strip()
    return unicodedata.normalize("NFC", body + _MARKS[match.group(1)]) if len(body) == 1 else body


def clean_markup(text: str) -> str:
    """Markdown links and emphasis removed, inline LaTeX turned into readable characters."""
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _MATH.sub(_math, text)
    text = _LETTERS.sub(lambda m: next(letters for letters in m.groups() if letters), text)
    text = _EMPHASIS.sub(lambda m: m.group(2), text)
    return " ".join(text.split())


_IMAGE = re.compile(r"!\[([^\]]*)\]\((?:[^()\s]|\([^()]*\))*(?:\s+\"[^\"]*\")?\)")
_ACTIVE_BLOCK = re.compile(r"<(script|style|iframe|object|embed|svg|math)\b[^>]*>.*?(?:</\1\s*>|$)", re.I | re.S)
_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>|<!--.*?-->", re.S)
_AUTOLINK = re.compile(r"<((?:https?|ftp|javascript|data|vbscript):[^<>\s]*)>", re.I)


def inert(text: str) -> str:
    """A chat model's text with nothing a Markdown or HTML renderer would fetch or run: images become their alt
    text, links their text, tags and script blocks are removed. Our own citations ([1]) and plain prose pass."""
    text = _ACTIVE_BLOCK.sub("", text)
    text = _IMAGE.sub(lambda m: m.group(1), text)
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _AUTOLINK.sub(lambda m: m.group(1) if m.group(1).lower().startswith(("http", "ftp")) else "", text)
    return _TAG.sub("", text)
