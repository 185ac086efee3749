"""The context kept of a HELM prompt (annotation/imports/helm_context.py): the instructions
and in-context examples before the instance's input, never a context that names the model."""

from __future__ import annotations

from annotation.imports.helm_context import (
    NAMES_MODEL,
    WHOLE_PROMPT,
    PromptContext,
    prompt_context,
)

FEW_SHOT = (
    "Answer the question.\n\n"
    "Question: What is 2 + 2?\nAnswer: 4\n\n"
    "Question: What is 3 + 3?\nAnswer: 6\n\n"
    "Question: What is 3 + 3?\nAnswer:"
)


def test_the_context_is_the_prompt_before_the_last_copy_of_the_input_and_its_prefix():
    # The input also appears as an in-context example: the instance's own copy is the last.
    context = prompt_context(
        prompt=FEW_SHOT,
        input_text="What is 3 + 3?",
        model="simple/model1",
        input_prefix="Question: ",
    )
    assert context == PromptContext(
        "Answer the question.\n\nQuestion: What is 2 + 2?\nAnswer: 4\n\n"
        "Question: What is 3 + 3?\nAnswer: 6"
    )


def test_no_context_when_the_prompt_starts_with_the_input_or_is_missing():
    assert prompt_context(prompt="Q: hi\nA:", input_text="Q: hi", model="m/x") == PromptContext("")
    assert prompt_context(prompt=None, input_text="hi", model="m/x") == PromptContext("")
    assert prompt_context(prompt="  ", input_text="hi", model="m/x") == PromptContext("")


def test_a_prompt_without_the_input_is_kept_whole_and_noted():
    context = prompt_context(prompt="Instructions.\n\nhi there", input_text="bye", model="m/x")
    assert context == PromptContext("Instructions.\n\nhi there", WHOLE_PROMPT)


def test_a_context_naming_the_model_is_not_kept():
    for prompt in (
        "You are Llama-3-70B, a helpful assistant.\n\nhi",
        "Made by META.\n\nhi",
        "Served as meta/llama-3-70b.\n\nhi",
    ):
        context = prompt_context(prompt=prompt, input_text="hi", model="meta/llama-3-70b")
        assert context == PromptContext("", NAMES_MODEL), prompt


def test_words_that_merely_contain_a_model_name_part_do_not_count():
    # "meta" in "metastatic" and "meta-analysis" is not the organisation Meta.
    prompt = "Read the meta-analysis on metastatic disease.\n\nhi"
    context = prompt_context(prompt=prompt, input_text="hi", model="meta/llama-3-70b")
    assert context == PromptContext("Read the meta-analysis on metastatic disease.")
