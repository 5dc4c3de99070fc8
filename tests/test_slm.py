"""The torch-free SLM runtime on the real exported SmolLM2-135M, both graph kinds.

Every test runs on the optimum int8 graph and on the GQA 8-bit graph (``export/gqa_graph.py``).
"""

import json

import pytest

from edge_rag.models.constraints import JsonObject, OneOf, Records, TokenMask
from edge_rag.models.slm import ContextOverflow, GenerationConfig

CONTEXT = ("Sources:\n[1] The bakery on Elm Street opens at 7 am every day.\n"
           "[2] Li Hua buys croissants there on Saturdays.\n\nQuestion: When does the bakery open?")
GREEDY = GenerationConfig(max_new_tokens=24)


@pytest.fixture(scope="module", params=["optimum", "gqa"])
def slm(request, slm, gqa_slm):
    """The conftest's optimum-graph SLM, then the GQA-graph one."""
    return slm if request.param == "optimum" else gqa_slm


def test_known_answer_from_a_given_context(slm):
    result = slm.generate(slm.chat(CONTEXT), GREEDY)
    assert "7" in result.text and result.finish_reason in {"eos", "length"}
    assert result.prompt_tokens > 20 and result.new_tokens > 0


def test_stream_pieces_join_to_the_generated_text(slm):
    prompt = slm.chat(CONTEXT)
    pieces = list(slm.stream(prompt, GREEDY))
    assert len(pieces) > 1 and "".join(pieces) == slm.generate(prompt, GREEDY).text


def test_streaming_never_splits_a_utf8_character(slm):
    prompt = slm.chat("Repeat exactly: 你好，世界！ 🌍🚀 café")
    pieces = list(slm.stream(prompt, GenerationConfig(max_new_tokens=30)))
    assert pieces and all("\ufffd" not in piece for piece in pieces)


def test_batched_generation_matches_one_at_a_time(slm):
    prompts = [slm.chat(CONTEXT), slm.chat("Name a colour of the sky."), slm.chat("Say hello.")]
    batched = [g.text for g in slm.generate_batch(prompts, GREEDY)]
    assert batched == [slm.generate(p, GREEDY).text for p in prompts]


def test_stop_strings_end_generation(slm):
    result = slm.generate(slm.chat("Count from 1 to 20 separated by commas."),
                          GenerationConfig(max_new_tokens=60, stop=("5",)))
    assert result.finish_reason == "stop" and "5" not in result.text


def test_seeded_sampling_is_reproducible(slm):
    config = GenerationConfig(max_new_tokens=16, temperature=1.0, top_p=0.9, seed=3)
    prompt = slm.chat("Write a short line about the sea.")
    assert slm.generate(prompt, config).text == slm.generate(prompt, config).text


def test_context_window_is_never_overflowed(slm):
    with pytest.raises(ContextOverflow, match="context window"):
        slm.generate("word " * (slm.context_tokens + 10), GREEDY)
    near = "word " * (slm.context_tokens - 40)
    result = slm.generate(near, GenerationConfig(max_new_tokens=500, ignore_eos=True))
    assert result.prompt_tokens + result.new_tokens <= slm.context_tokens


def test_token_mask_hook_restricts_tokens(slm):
    digits = [slm.tokenizer.token_to_id(str(d)) for d in range(10)]
    mask = TokenMask(lambda step, ids: __import__("numpy").array(digits))
    result = slm.generate(slm.chat(CONTEXT), GenerationConfig(max_new_tokens=5), mask)
    assert result.text.isdigit() and len(result.text) == 5


@pytest.mark.slow
def test_constrained_json_always_parses_at_temperature_one(slm):
    constraint = JsonObject((("answer", None), ("confidence", ("high", "low"))), max_string=24)
    prompt = slm.chat(CONTEXT + "\nReply in JSON with keys answer and confidence.")
    for seed in range(100):
        config = GenerationConfig(max_new_tokens=12, temperature=1.0, seed=seed)
        text = slm.generate(prompt, config, constraint).text
        parsed = json.loads(text)
        assert list(parsed) == ["answer", "confidence"] and parsed["confidence"] in {"high", "low"}


def test_constrained_labels_and_records_always_parse(slm):
    labels = OneOf(("A", "B", "C", "D", "E"))
    prompt = slm.chat("Which option, A, B, C, D or E? Answer with one letter.")
    for seed in range(20):
        config = GenerationConfig(max_new_tokens=4, temperature=1.0, seed=seed)
        assert slm.generate(prompt, config, labels).text in labels.labels
    records = Records((("entity", 3), ("relation", 4)), max_records=3, max_field=20)
    prompt = slm.chat("Extract entities from 'Bob met Alice in Paris.' as lines "
                      "entity<|>name<|>type<|>description, then <|DONE|>.")
    for seed in range(10):
        config = GenerationConfig(max_new_tokens=30, temperature=1.0, seed=seed)
        assert records.is_complete(slm.generate(prompt, config, records).text)


def test_stream_never_shows_part_of_a_stop_string(slm):
    prompt = slm.chat("Count from 1 to 10 separated by commas.")
    free = slm.generate(prompt, GenerationConfig(max_new_tokens=40)).text
    stop = free[8:12]
    assert len(stop) == 4
    pieces = list(slm.stream(prompt, GenerationConfig(max_new_tokens=40, stop=(stop,))))
    assert "".join(pieces) == free[: free.index(stop)]


def test_prefix_cache_skips_the_shared_prompt_and_keeps_the_answer(slm):
    system = "You answer questions from the numbered sources in one short sentence."
    first = slm.chat(CONTEXT, system)
    other = slm.chat(CONTEXT.replace("When does the bakery open?", "Who buys croissants?"), system)
    slm.generate(slm.chat("Say hello."), GREEDY)  # an unrelated prompt: little in common
    cold = slm.generate(other, GREEDY)
    slm.generate(first, GREEDY)
    warm = slm.generate(other, GREEDY)
    assert cold.cached_tokens < 10 < warm.cached_tokens < warm.prompt_tokens
    assert warm.text == cold.text
    again = slm.generate(other, GREEDY)
    assert again.cached_tokens == again.prompt_tokens - 1 and again.text == cold.text
