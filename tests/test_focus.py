"""The focused answer stage's parts that need no model: documents cut into lines, answer forms,
the date rule of abstention, the start mask."""

from edge_rag.answer import dates_in, missing_date
from edge_rag.answer.abstain import question_terms, unsupported
from edge_rag.answer.evidence_lines import content_words, lexical_overlap, split_document
from edge_rag.answer.forms import answer_form, question_kind, start_mask
from edge_rag.retrieve import RetrievedChunk

CHUNK = RetrievedChunk(1, "d1", "chat.txt", "", 0.9)
CHAT = ["Time: 20260105_14:00\nLiHua: When's a good time for me to come by?\nAdamSmith: Any time "
        "after 5 PM today.\nLiHua: I'll be there around 5:30",
        "LiHua: I'll be there around 5:30 PM then.\nAdamSmith: Great, see you!"]


def test_a_chat_is_cut_into_whole_lines_under_its_date():
    doc = split_document(CHUNK, CHAT)
    assert doc.chat and doc.header == "20260105_14:00"
    assert doc.lines == ["LiHua: When's a good time for me to come by?",
                         "AdamSmith: Any time after 5 PM today.",
                         "LiHua: I'll be there around 5:30 PM then.", "AdamSmith: Great, see you!"]


def test_a_passage_is_cut_into_sentences_under_its_title():
    doc = split_document(CHUNK, ["Blind Shaft\nBlind Shaft is a 2003 film. It was directed by Li Yang."])
    assert not doc.chat and doc.header == "Blind Shaft"
    assert doc.lines == ["Blind Shaft is a 2003 film.", "It was directed by Li Yang."]


def test_question_kinds():
    kinds = {"Did Li Hua ask Thane first?": "yesno", "Who invites Li Hua?": "who",
             "What time is the power outage?": "time", "When does the plumber arrive?": "when",
             "What is the date of death of X's father?": "when", "What is the cafe's name?": "phrase",
             "Which film came out first, Blind Shaft or Pearl Lust?": "choice",
             "Are both X and Y from the same country?": "yesno"}
    assert {q: question_kind(q) for q in kinds} == kinds


def test_answer_forms_take_their_starts_from_the_sources():
    evidence = "\n".join(split_document(CHUNK, CHAT).lines)
    assert answer_form("Did he come?", evidence, True).starts == ("Yes", "No")
    assert "around 5:30 PM" in answer_form("What time does Li Hua come by?", evidence, True).starts
    who = answer_form("Who does Li Hua visit?", evidence, True, evidence.split("\n")[1:])
    assert who.starts[0] == "AdamSmith" and "LiHua" not in who.starts  # the question's own name
    assert answer_form("Which came first, Blind Shaft or Pearl Lust?", "", False).starts == (
        "Blind Shaft", "Pearl Lust")


def test_a_birth_or_death_question_starts_with_a_birth_or_death_date():
    evidence = ("Diary of a Maniac is a 1993 Italian drama film directed by Marco Ferreri.\n"
                "Marco Ferreri( 11 May 1928, in Milan – 9 May 1997) was an Italian film director.\n"
                "Piero Schivazappa( born 14 April 1935) is a director. He died on 2 March 2001 in Rome.")
    born = answer_form("When was Marco Ferreri born?", evidence, False)
    assert born.starts == ("11 May 1928", "14 April 1935")
    assert answer_form("What is the date of death of X?", evidence, False).starts == ("9 May 1997",
                                                                                      "2 March 2001")
    assert "1993" in answer_form("When was Diary of a Maniac released?", evidence, False).starts
    assert "1993" in answer_form("When was X born?", "X is a 1993 film.", False).starts  # no life dates: all


def test_a_date_no_source_has_means_abstain():
    doc = split_document(CHUNK, CHAT)
    assert dates_in("on April 15, 2026 and the 9th and 20260425") == {(4, 15), (0, 9), (4, 25)}
    assert missing_date("What did Li Hua say on June 9, 2026?", [doc])
    assert not missing_date("What did Li Hua say on 20260105?", [doc])
    assert not missing_date("What did Li Hua say?", [doc])


def test_lexical_overlap_allows_spelling_variants():
    words = content_words("What colour did Li Hua paint the basement?")
    assert "colour" in words and "what" not in words
    assert lexical_overlap(words, "He painted the basement walls blue, the color he likes") > 0.3


def test_start_mask_follows_the_spans_then_frees():
    spans = {"Yes": [1, 2], "No": [3]}
    mask = start_mask(("Yes", "No"), lambda s: spans[s])
    assert sorted(mask.allowed(0, [])) == [1, 3]
    assert list(mask.allowed(1, [1])) == [2]
    assert mask.allowed(1, [3]) is None and mask.allowed(2, [1, 2]) is None


def test_a_what_time_question_takes_its_times_from_the_subjects_own_lines():
    chat = ("[1] 20260105_14:00\nAdamSmith: You can come by anytime after 5 PM today.\n"
            "LiHua: Awesome! I'll be there around 5:30 PM then.")
    asked = "What time does Li Hua check in with Adam about moving in?"
    assert answer_form(asked, chat, chat=True).starts == ("around 5:30 PM",)
    # A subject who names no time leaves every time in the sources to choose from.
    other = "What time does Wolfgang want to meet?"
    assert answer_form(other, chat, chat=True).starts == ("after 5 PM", "today", "around 5:30 PM")


def test_abstention_counts_the_question_terms_no_evidence_word_matches():
    evidence = "20260105_14:00\nJenniferMoore: Try longer cardio sessions.\nLiHua: Sounds good!"
    assert question_terms("What specific cardio does Jennifer's diet suggest?") == [
        "cardio", "jennifer", "diet", "suggest"]
    assert unsupported("What cardio does Jennifer suggest on 20260105?", evidence) == ["suggest"]
    assert unsupported("What protein powder did Jennifer buy in December?", evidence) == [
        "protein", "powder", "buy", "december"]


def test_documents_are_dated_by_their_chat_header_or_file_name():
    from edge_rag.answer import document_days, on_days
    assert document_days("chats/a.txt", "Time: 20260403_08:00") == {(4, 3)}
    assert document_days("week1/20260106_1500.txt", "Hello") == {(1, 6)}
    assert document_days("notes.txt", "Blind Shaft") == set()
    assert on_days({(4, 3)}, {(4, 3)}) and on_days({(0, 3)}, {(4, 3)}) and not on_days({(4, 4)}, {(4, 3)})


def test_a_short_answer_is_followed_by_the_source_words_around_it():
    from edge_rag.answer import quote
    from edge_rag.answer.evidence_lines import Focus, Line
    doc = split_document(CHUNK, ["Time: 20260105_14:00\nAdamSmith: Hi! There will be a power outage "
                                 "tomorrow from 2pm to 3pm. Sorry!\nLiHua: Just use removable hooks."])
    focus = Focus([(doc, [Line(0, i, text) for i, text in enumerate(doc.lines)])])
    assert quote("3pm [1]", focus) == "There will be a power outage tomorrow from 2pm to 3pm."
    assert quote("Removable hooks [1]", focus) == "Just use removable hooks."
    assert quote("Just use removable hooks. [1]", focus) == ""  # nothing to add
    assert quote("A zebra [1]", focus) == ""  # not copied from the sources


def test_who_said_it_is_the_speaker_of_the_best_line_and_never_the_question_s_own_name():
    best = ["LiHua: Great ideas, Thrall! How about adding picnic tables for families?",
            "Thrall: I love that idea, Li Hua!", "JakeWatson: Pedri can be a game-changer for us."]
    said = answer_form("Who proposes adding picnic tables for families?", "\n".join(best), True, best)
    assert said.starts == ("LiHua",)  # not Thrall, whom the message addresses
    # A question that names the best line's speaker falls back to the names to choose from.
    asked = answer_form("Who suggests to Li Hua adding picnic tables?", "\n".join(best), True, best)
    assert len(asked.starts) > 1 and "LiHua" not in asked.starts
    # A first name in the question is the question's own subject too ("Jake" for JakeWatson).
    believe = answer_form("Who does Jake believe is a game-changer?", best[2], True, best[2:])
    assert "JakeWatson" not in believe.starts and "Pedri" in believe.starts


def test_a_restated_answer_is_followed_by_the_source_sentence_it_restates():
    from edge_rag.answer import source_sentence
    from edge_rag.answer.evidence_lines import Focus, Line
    doc = split_document(CHUNK, ["Time: 20260105_14:00\nWolfgangSchulz: Let's go to the music store! "
                                 "We could check out some new gear and get inspired for our next "
                                 "jam session.\nLiHua: Sounds good."])
    focus = Focus([(doc, [Line(0, i, text) for i, text in enumerate(doc.lines)])])
    restated = ("Wolfgang and LiHua will check out some new gear and get inspired for their next "
                "jam session. [1]")
    assert source_sentence(restated, focus) == (
        "We could check out some new gear and get inspired for our next jam session.")
    assert source_sentence("They will go shopping. [1]", focus) == ""  # too little in common
    assert source_sentence("Sounds good. [1]", focus) == ""


def test_an_answer_that_only_echoes_the_question_is_no_answer():
    from edge_rag.answer import echoes

    assert echoes("House rule [1]", "What house rule does Adam mention?")
    assert echoes("Li Hua wants to know about WolfgangSchulz's pizza preference. [1]",
                  "What does LiHua want to know about WolfgangSchulz's pizza preference?")
    assert not echoes("Lavender and coneflowers [1]", "What flowers does Li Hua recommend?")
    assert not echoes("[1]", "What house rule does Adam mention?")  # no words: the bare rule's case
