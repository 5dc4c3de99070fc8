"""Bridge questions split into links (``questions.first_hop``) and their answers read for a name
(``answer.hops``): no model, no index."""

import pytest

from edge_rag.answer.hops import attach, bridge_name, compare, date_of, resolve
from edge_rag.answer.types import Answer
from edge_rag.questions import comparison, first_hop
from edge_rag.retrieve import RetrievedChunk


@pytest.mark.parametrize(("question", "inner", "outer"), [
    ("Where was the director of film Thomas Jefferson (Film) born?",
     "Who is the director of film Thomas Jefferson (Film)?", "Where was {} born?"),
    ("What is the date of death of Hermann Ii, Landgrave Of Hesse's father?",
     "Who is the father of Hermann Ii, Landgrave Of Hesse?", "What is the date of death of {}?"),
    ("Who is the father of the director of film Magic Hunter?",
     "Who is the director of film Magic Hunter?", "Who is the father of {}?"),
    ("Who is Karl Von Habsburg's paternal grandmother?",
     "Who is the father of Karl Von Habsburg?", "Who is the mother of {}?"),
    ("Who is Albert G. Simms's father-in-law?",
     "Who is the spouse of Albert G. Simms?", "Who is the father of {}?"),
    ("Which country Aleksander Koniecpolski (1620–1659)'s father is from?",
     "Who is the father of Aleksander Koniecpolski (1620–1659)?", "Which country {} is from?"),
    ("Where did the director of film Gone with the Wind graduate from?",
     "Who is the director of film Gone with the Wind?", "Where did {} graduate from?"),
    ("What is the award that the performer of song Little Wing got?",
     "Who is the performer of song Little Wing?", "What is the award that {} got?"),
    ("Which award the director of film Harbor Lights earned?",
     "Who is the director of film Harbor Lights?", "Which award {} earned?"),
])
def test_a_chain_of_relation_nouns_gives_its_innermost_link(question, inner, outer):
    hop = first_hop(question)
    assert hop is not None and (hop.inner, hop.outer) == (inner, outer)
    assert hop.then("Ann Lee") == outer.replace("{}", "Ann Lee")


@pytest.mark.parametrize("question", [
    "Who is the father of Dui Finn?",  # one link and nothing more
    "Who is the stepmother of Sara Ali Khan?",
    "What time does Li Hua's mother arrive?",  # the description is not a name
    "When did the sister of Jake move to Boston?",
    "What did the author of the book say?",
    "Where was Li Hua born?",
    "Which film came out first, Run The Race or Cup-Tie Honeymoon?",
])
def test_a_question_of_one_link_or_none_is_not_split(question):
    assert first_hop(question) is None


def test_a_bridge_is_the_answers_words_before_its_citation():
    assert bridge_name('John Ford [1] — "directed by John Ford"') == "John Ford"
    assert bridge_name("Yuen Woo-ping.") == "Yuen Woo-ping"
    assert bridge_name("Mara Quill is the director of film Harbor Lights. [1]") == "Mara Quill"
    assert bridge_name("The director of film Harbor Lights was Mara Quill. [1]") == "Mara Quill"
    assert bridge_name("Insufficient information.") == ""
    assert bridge_name("The film was directed by a man who was born in a small town near the sea [2]") == ""


def test_links_are_answered_in_order_until_one_gives_no_name():
    asked: list[str] = []
    replies = {"Who is the father of X Y?": "Ann Lee [1]",
               "Who is the father of Ann Lee?": "Insufficient information."}

    def ask(question: str) -> Answer:
        asked.append(question)
        return Answer(replies[question], "vector")

    question, links = resolve("Who is X Y's paternal grandfather?", ask)
    assert asked == ["Who is the father of X Y?"] and question == "Who is the father of Ann Lee?"
    assert [link.details["question"] for link in links] == ["Who is the father of X Y?"]


def test_a_links_cited_source_follows_the_final_answers_sources():
    chunk = lambda n: RetrievedChunk(n, f"d{n}", f"s{n}.txt", "", 0.5)  # noqa: E731
    final = Answer("Tallinn [1]", "vector", [chunk(1), chunk(2)])
    link = Answer("Mara Quill [2], [1]", "vector", [chunk(2), chunk(8)], details={"question": "Who?"})
    attach(final, [link])
    assert [c.chunk_id for c in final.sources] == [1, 2, 8]  # a source held already is not repeated
    assert final.hops == [{"question": "Who?", "answer": "Mara Quill [3], [2]"}]
    assert final.text == "Tallinn [1]"


@pytest.mark.parametrize(("question", "questions", "earliest"), [
    ("Which film came out first, Run The Race or Cup-Tie Honeymoon?",
     ("When was Run The Race released?", "When was Cup-Tie Honeymoon released?"), True),
    ("Which film has the director who was born later, Navy Nurse or The Face In The Fog?",
     ("When was the director of film Navy Nurse born?",
      "When was the director of film The Face In The Fog born?"), False),
    ("Who is older, Les Briley or Jean Charles Carbone?",
     ("When was Les Briley born?", "When was Jean Charles Carbone born?"), True),
    ("Was Ausaf Ali or Steven Perry born first?",
     ("When was Ausaf Ali born?", "When was Steven Perry born?"), True),
    ("Who was born later out of Alberto Casado Cerviño and Arjun Naidu?",
     ("When was Alberto Casado Cerviño born?", "When was Arjun Naidu born?"), False),
    ("Which film has the director who died later, Love, Honor And Oh-Baby! or I Cover The Underworld?",
     ("When did the director of film Love, Honor And Oh-Baby! die?",
      "When did the director of film I Cover The Underworld die?"), False),
])
def test_an_either_or_question_about_dates_asks_one_date_per_option(question, questions, earliest):
    compared = comparison(question)
    assert compared is not None and (compared.questions, compared.earliest) == (questions, earliest)


@pytest.mark.parametrize("question", ["Who lived longer, Martino Finotto or Franklin Edson?",
                                      "Which is bigger, a cat or a dog?", "When was Navy Nurse released?"])
def test_other_questions_are_not_compared(question):
    assert comparison(question) is None


def test_dates_are_read_from_the_answers_own_words_first():
    assert date_of('3 February 1377 [1] — "born 1320"') == (1377, 2, 3)
    assert date_of("April 2, 1965 [1]") == (1965, 4, 2) and date_of("Sept. 1990") == (1990, 9, 0)
    assert date_of('It is not said [1] — "released in 1948"') == (1948, 0, 0)
    assert date_of("Insufficient information.") is None and date_of("Soon [1]") is None


def test_the_option_whose_date_wins_is_the_answer():
    chunk = lambda n: RetrievedChunk(n, f"d{n}", f"s{n}.txt", "", 0.5)  # noqa: E731
    replies = {"When was A released?": Answer("1992 [1]", "ppr", [chunk(1), chunk(3)],
                                              hops=[{"question": "Who made A?", "answer": "Ann [2]"}]),
               "When was B released?": Answer('5 May 1948 [1] — "B (1948)"', "ppr", [chunk(2)])}
    answer = compare("Which film came out first, A or B?", lambda q: replies[q])
    assert answer is not None and answer.text == "B (5 May 1948) [1]"
    assert [c.chunk_id for c in answer.sources] == [2, 3, 1]
    assert answer.hops == [{"question": "When was B released?", "answer": '5 May 1948 [1] — "B (1948)"'},
                           {"question": "Who made A?", "answer": "Ann [2]"},  # the other's own link
                           {"question": "When was A released?", "answer": "1992 [3]"}]
    replies["When was A released?"] = Answer("Insufficient information.", "ppr")
    assert compare("Which film came out first, A or B?", lambda q: replies[q]) is None  # asked as it is
