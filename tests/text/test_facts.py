"""Numbers and names a sentence states that its sources do not contain."""

from __future__ import annotations

from assistant.text.facts import numbers, unsupported_facts

ABSTRACT = (
    "We evaluate on twenty tasks from Meta-World and report a 3.3% gain over PaLM2-Gecko, "
    "trained on 17,720 images with 1.16x speedup."
)


def test_numbers_are_read_as_written_in_prose() -> None:
    assert numbers("17,720 images, 3.30% and 0.5 s; GPT-4 and ViT-L/14 hold no number") == {"17720", "3.3", "0.5"}


def test_facts_the_source_states_pass_in_other_spellings() -> None:
    assert unsupported_facts("It reports a 3.3 % gain on 20 Metaworld tasks over PaLM2-Gecko with 17720 images.", [ABSTRACT]) == []
    assert unsupported_facts("LLMs on GPUs with RL are not facts to check.", [ABSTRACT]) == []
    assert unsupported_facts("YES, and NOT only on Meta-World.", [ABSTRACT]) == []


def test_invented_numbers_and_names_are_listed() -> None:
    assert unsupported_facts("It was compared on 10 tasks of HalfCheetah-v2 with a 1.16x speedup.", [ABSTRACT]) == ["10", "HalfCheetah-v2"]
    assert unsupported_facts("Generating one scene takes about 0.5 seconds.", [ABSTRACT]) == ["0.5"]
