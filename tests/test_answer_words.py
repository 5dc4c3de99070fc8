"""Answers in a person's words and only what a source says (issue 60): the finish of the focused
stage on real evidence lines, without a model."""

from __future__ import annotations

from edge_rag.answer.evidence_lines import Focus, Line, split_document
from edge_rag.answer.support import check, citations, claims
from edge_rag.answer.wording import in_words, names_of, rewrite_stream
from edge_rag.retrieve import RetrievedChunk

CHAT = ("Time: 20260105_14:00\nLiHua: Hey Adam! When's a good time for me to come by?\n"
        "AdamSmith: You can come by anytime after 5 PM today.\n"
        "LiHua: Awesome! I'll be there around 5:30 PM then.")
PASSAGE = ("Mara Quill\nMara Quill (4 May 1912 – 9 June 1980) was a film director. Quill was born in "
           "Tallinn and studied painting.")
NAMES = {"LiHua": "Li Hua", "AdamSmith": "Adam Smith"}


def focus(*texts: str) -> Focus:
    sources = []
    for n, text in enumerate(texts):
        doc = split_document(RetrievedChunk(n, f"doc{n}", f"week1/file{n}.txt", text, 1.0), [text])
        sources.append((doc, [Line(n, i, line) for i, line in enumerate(doc.lines)]))
    return Focus(sources, [line for _, lines in sources for line in lines])


def test_handles_become_names_and_stamps_dates_in_the_answer_not_in_its_quote() -> None:
    assert in_words("AdamSmith's flat [1]", NAMES) == "Adam Smith's flat [1]"
    assert in_words("20260307_18:00 [1]", NAMES) == "7 March 2026, 18:00 [1]"
    assert in_words("On 20260122 [2]", NAMES) == "On 22 January 2026 [2]"
    assert in_words("Call 31415926 [1]", NAMES) == "Call 31415926 [1]"  # no date
    assert names_of(["LiHua", "ChaeSong-hwa", "Anna Lee", "Bob"]) == {"LiHua": "Li Hua",
                                                                       "ChaeSong-hwa": "Chae Song-hwa"}


def test_a_streamed_answer_is_rewritten_word_by_word_as_the_whole_is() -> None:
    pieces = ["Adam", "Sm", "ith said 2026", "0307_18", ":00 [1]", "(LiHua", "'s) it"]
    assert "".join(rewrite_stream(pieces, NAMES)) == in_words("".join(pieces), NAMES)
    assert list(rewrite_stream(["Yes", ", it", " was"], NAMES)) == ["Yes", ", it", " was"]  # not held


def test_an_answer_naming_what_its_source_holds_is_kept_as_it_is() -> None:
    shown = focus(CHAT)
    text, found = check("Around 5:30 PM [1]", shown, "What time does Li Hua come by?")
    assert text == "Around 5:30 PM [1]" and not found.unsupported
    text, found = check("7 January 2026, 14:00 [1]", shown, "When did Li Hua ask?")
    assert found.unsupported == ["7"]  # the chat is from 5 January
    assert check("5 January 2026, 14:00 [1]", shown, "When did Li Hua ask?")[1].unsupported == []
    assert check("He's right, it'll rain [1]", focus("Time: 20260527_10:00\nTuralyon: It’ll rain."),
                 "Who?")[1].unsupported == []  # quotes straightened; "He's" names no one
    assert check("From 2-3 pm [1]", focus("Time: 20260527_10:00\nTuralyon: No noise from 2-3 pm."),
                 "What time?")[1].unsupported == []


def test_a_place_no_source_holds_is_cut_and_an_invented_name_withdraws_the_answer() -> None:
    shown = focus(PASSAGE)
    text, found = check("Mara Quill was born in Tallinn, Turkey [1]", shown, "Where was Mara Quill born?")
    assert text == "Mara Quill was born in Tallinn [1]" and found.cut == ["Turkey"]
    assert check("Riga [1]", shown, "Where was Mara Quill born?")[1].abstain


def test_a_claim_another_shown_source_holds_gets_its_citation() -> None:
    text, found = check("Tallinn, after 5 PM [1]", focus(CHAT, PASSAGE), "Where?")
    assert found.recited == [2] and text == "Tallinn, after 5 PM [1][2]"


def test_claims_are_names_places_months_and_numbers_not_yes_or_greetings() -> None:
    said = claims("Yes, Mara Quill met Adam in March 1950 at 5 PM.")
    assert said == ["Mara Quill", "Adam", "March", "1950", "5"]


def test_a_citation_carries_the_file_and_line_it_stands_on() -> None:
    found = citations('Around 5:30 PM [1] — "I\'ll be there around 5:30 PM then."', focus(CHAT))
    assert found == [{"n": 1, "doc_id": "doc0", "source": "week1/file0.txt", "line": 4,
                      "text": "LiHua: Awesome! I'll be there around 5:30 PM then."}]


def test_a_yes_no_answer_with_an_invented_place_keeps_its_yes_and_any_other_abstains() -> None:
    from edge_rag.answer.focused import Prepared, _withdrawn
    from edge_rag.answer.forms import Form

    said = "Yes, both are from the United States. [1]"
    assert _withdrawn(said, Prepared("", focus(PASSAGE), Form("yesno", ("Yes",)))) == "Yes [1]"
    assert _withdrawn("Riga [1]", Prepared("", focus(PASSAGE), Form("phrase"))) == "Insufficient information."
