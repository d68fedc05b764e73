"""Which words of a question can only be nouns: the things it asks about.

A question naming a thing no abstract of the index uses ("elevator", "lyrics",
"poverty") asks about something the corpus does not cover, while a verb or an
adjective no abstract uses ("sharpen", "unsure", "haggle") is only the way the
question is put. lemminflect's dictionary, bundled inside its package (no
download), tells which parts of speech an English word can take.
"""

from __future__ import annotations

import logging
from typing import Any

from assistant.infra.loading import shared, unimportable

log = logging.getLogger(__name__)


def _load() -> Any:
    """lemminflect's lemmatizer; spaCy is kept out (lemminflect only registers with it when present: ~2 s of imports)."""
    try:
        with unimportable(("spacy",)):
            import lemminflect
    except ImportError:
        log.warning("lemminflect is not installed: no word of a question is read as a noun")
        return None
    return lemminflect


def only_noun(word: str) -> bool:
    """Whether the dictionary knows `word` (any inflection) only as a noun; an unknown word is no noun here (abbreviations,
    halves of hyphenated words, names: other checks read those)."""
    lemminflect = shared("lemminflect", _load)
    return lemminflect is not None and set(lemminflect.getAllLemmas(word.lower())) == {"NOUN"}
