import subprocess
import sys

import pytest

from assistant.text.nouns import only_noun


@pytest.mark.parametrize(("word", "noun"), [
    ("elevator", True), ("Lyrics", True), ("poverty", True),  # a thing, in any case and inflection
    ("weather", False), ("crop", False),  # also verbs
    ("sharpen", False), ("unsure", False), ("haggle", False),  # a question's phrasing
    ("MRI", False), ("deepfake", False),  # unknown to the dictionary: names and abbreviations are read elsewhere
])
def test_only_a_word_the_dictionary_knows_only_as_a_noun_is_one(word: str, noun: bool) -> None:
    assert only_noun(word) is noun


def test_the_dictionary_loads_without_spacy() -> None:
    """lemminflect imports spaCy when it is installed (the reader's packages bring it): ~2 s for nothing used here."""
    code = "import sys; from assistant.text.nouns import only_noun; only_noun('song'); print('spacy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
