"""Prompt-lookup decoding: drafts copied from the prompt, checked in one call of the GQA graph."""

from dataclasses import replace

import numpy as np

from edge_rag.models.constraints import TokenMask
from edge_rag.models.lookup import PromptLookup
from edge_rag.models.slm import GenerationConfig

GREEDY = GenerationConfig(max_new_tokens=40)
STEPWISE = replace(GREEDY, draft_tokens=0)
CONTEXT = ("[1] Li Hua: The bakery on Elm Street opens at 7 am and closes at 6 pm on weekdays.\n"
           "[2] Wolfgang: The rehearsal moved to the old music store on Friday evening.")


def test_a_draft_continues_the_latest_earlier_occurrence_of_the_last_tokens():
    lookup = PromptLookup([1, 2, 3, 4, 9, 2, 3, 5, 6], draft=3)
    assert lookup.draft() == []  # "5 6" never occurred before
    for token in (8, 2, 3):
        lookup.append(token)
    assert lookup.draft() == [5, 6, 8]  # "2 3" last occurred before "5 6 8"
    assert lookup.draft(limit=1) == [5]


def test_a_longer_match_wins_over_a_later_shorter_one():
    lookup = PromptLookup([2, 3, 4, 9, 7, 3, 4, 5, 6, 2, 3, 4], draft=3)
    assert lookup.draft() == [9, 7, 3]  # "2 3 4", not the later "3 4" (followed by 5)


def test_a_draft_never_comes_from_a_single_token_match():
    lookup = PromptLookup([7, 8, 9, 7], draft=2)
    assert lookup.draft() == []


def test_drafted_decoding_writes_the_stepwise_text_and_keeps_drafts(gqa_slm):
    prompt = gqa_slm.chat(f"{CONTEXT}\n\nRepeat sentence [1] word for word.")
    gqa_slm._gqa.reset()
    stepwise = gqa_slm.generate(prompt, STEPWISE)
    gqa_slm._gqa.reset()
    drafted = gqa_slm.generate(prompt, GREEDY)
    assert drafted.text == stepwise.text and "7 am" in drafted.text
    assert drafted.new_tokens == stepwise.new_tokens
    assert drafted.accepted_tokens > 0 and stepwise.accepted_tokens == 0


def test_a_rejected_draft_leaves_the_cache_as_stepwise_decoding_would(gqa_slm):
    # After drafted decoding the cache must hold exactly the tokens kept: a second prompt that
    # reuses its prefix answers as it does from an empty cache.
    question = gqa_slm.chat(f"{CONTEXT}\n\nWhere did the rehearsal move?")
    gqa_slm._gqa.reset()
    fresh = gqa_slm.generate(question, GREEDY).text
    other = gqa_slm.generate(gqa_slm.chat(f"{CONTEXT}\n\nWhen does the bakery open?"), GREEDY)
    kept = len(gqa_slm._gqa.caches[0].ids) - other.prompt_tokens  # the last choice is not run
    assert kept in (other.new_tokens - 1, other.new_tokens)
    assert gqa_slm.generate(question, GREEDY).text == fresh


def test_a_token_mask_applies_to_drafted_tokens_too(gqa_slm):
    banned = gqa_slm.tokenizer.encode(" 7", add_special_tokens=False).ids
    others = np.setdiff1d(np.arange(gqa_slm._gqa.vocab), banned)

    def allowed(step, ids):
        return others

    prompt = gqa_slm.chat(f"{CONTEXT}\n\nRepeat sentence [1] word for word.")
    texts = []
    for config in (STEPWISE, GREEDY):
        gqa_slm._gqa.reset()  # a reused prefix rounds differently, and this mask leaves a near tie
        texts.append(gqa_slm.generate(prompt, config, TokenMask(allowed)))
    assert texts[0].text == texts[1].text and " 7" not in texts[1].text
