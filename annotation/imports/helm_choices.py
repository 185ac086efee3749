"""Multiple-choice HELM runs: the options live only in the prompt and in the request
state's output_mapping ({"A": "Even", "B": "Odd"}), the completion is a letter.

A clinician must see what the model chose among: the item's input gets the options, one a
line ("A. Even"), its output the chosen option ("B. Odd") and its reference the correct one
in the same form. A completion that is none of the letters is kept as it is, and counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Choice:
    """The texts of a multiple-choice item, and whether the completion named an option."""

    input_text: str
    output_text: str
    reference_text: str
    mapped: bool


def output_mapping(state: dict[str, Any]) -> dict[str, str] | None:
    """The state's output_mapping when it is a non-empty {letter: option text}, else None."""
    mapping = state.get("output_mapping")
    if not isinstance(mapping, dict) or not mapping:
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
        return None
    return mapping


def options_text(mapping: dict[str, str]) -> str:
    return "\n".join(f"{letter}. {text}" for letter, text in mapping.items())


def read_choice(
    *, mapping: dict[str, str], question: str, completion: str, reference: str
) -> Choice:
    """The item's texts for a multiple-choice state (see the module docstring)."""
    answer = completion.strip()
    # HELM strips the completion and compares it to the letters; a trailing "." or ")" is
    # what models often add, so it is tolerated here too.
    letter = answer.rstrip(".)").strip()
    mapped = letter in mapping
    output = f"{letter}. {mapping[letter]}" if mapped else completion
    ref_letter = next((k for k, v in mapping.items() if v == reference), None)
    ref_text = f"{ref_letter}. {reference}" if ref_letter is not None else reference
    return Choice(
        input_text=f"{question}\n\n{options_text(mapping)}",
        output_text=output,
        reference_text=ref_text,
        mapped=mapped,
    )
