"""The lexicon that indexing, retrieval and planning share: surface patterns, stop words,
question words and answer types, entity keys, and the graph's names matched in a question.

The fast extractor (``index/fast.py``) finds entities with these patterns; query keywords
(``retrieve/keywords.py``, eqs. 12 and 18) find the same kinds of terms in a question; the
planner's cheap features (``plan/features.py``) count them. Keeping them in one place keeps the
three in step, and keeps index, retrieve and plan from importing each other.

Design: docs/design/questions.md
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from rapidfuzz import fuzz, process

MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
          "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
PATTERNS = (
    ("time", re.compile(r"\b(?:[01]?\d|2[0-3])(?::[0-5]\d)?\s?[ap]\.?m\b\.?|\b(?:[01]?\d|2[0-3]):[0-5]\d\b",
                        re.IGNORECASE)),
    ("date", re.compile(rf"\b(?:(?:{MONTHS})\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?|"
                        rf"\d{{1,2}}(?:st|nd|rd|th)? (?:of )?(?:{MONTHS})\b|(?:{WEEKDAYS}))\b",
                        re.IGNORECASE)),
    ("quantity", re.compile(r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s?(?:%|percent|dollars?|"
                            r"euros?|yuan|km|kg|miles?|hours?|minutes?|days?|weeks?|months?|years?|"
                            r"people|pounds?)\b", re.IGNORECASE)),
    ("title", re.compile(r"[\"“]([^\"”\n]{3,60})[\"”]")),
)
NAME = re.compile(r"\b[A-Z][\w'\-]*(?:\s+(?:of |de |von |van )?[A-Z][\w'\-]*)*")
POSSESSIVE = re.compile(r"['’]s$")

STOPWORDS = frozenset("""
a about above after again against all almost also although always am an and any anyone anything
are around as at away back be because been before being below best better between big both but by
can cannot can't could couldn't did didn't do does doesn't doing don't done down during each
either else enough even ever every everyone everything few for from fun get gets getting give go
goes going gone good got great had hadn't has hasn't have haven't having he he'd he'll her here
hers herself hey hi him himself his hope how however i i'd i'll i'm i've if in into is isn't it
it's its itself just keep know last let let's like little lot lots look looking love made make
makes making many may maybe me might mine more most much must my myself need needs never new next
nice no nor not nothing now of off oh ok okay on once one only or other our ours ourselves out
over own perfect please pretty quite rather really right said same say see seems shall she she'd
she'll should shouldn't since so some something soon sounds still such sure take than thank
thanks that that's the their theirs them themselves then there there's these they they'd they'll
they're they've thing things think this those though through time to today together tomorrow
tonight too totally try up us very want wants was wasn't way we we'd we'll we're we've well were
weren't what what's when where which while who whom whose why will wish with within without won't
would wouldn't yeah yes yet you you'd you'll you're you've your yours yourself yourselves awesome
amazing excited glad happy definitely absolutely actually already another anyway bit came come
coming day days done feel feeling first found getting guess help idea instead kind later least
maybe mind miss morning night evening afternoon week weekend plan plans probably ready remember
seem seen sounds start started stuff super tell thanks thought told took trying wait wanted
wonderful work working worry worries appreciate cool fantastic enjoy enjoyed share sharing talk
talking touch check checking hear heard update updates favorite favourite mean means place
thinking guys folks gonna wanna gotta everybody someone somewhere people person thing times sometimes
wow hello yay ooh haha omg aww yep nope hmm ugh whoa yo dear
""".split())  # noqa: SIM905 - a word list reads better as text

# Question words, one vocabulary. Wh-words open open questions; their order is the order of the
# planner's q_<word> features (changing it needs a new FEATURE_VERSION and a re-exported head).
# YES_NO_OPENERS are the auxiliaries the planner's yes_no feature looks for as a first word (the
# head was trained with these nine). Query keywords skip every question word.
WH_WORDS = ("what", "when", "where", "which", "who", "how", "why")
YES_NO_OPENERS = ("is", "are", "was", "were", "do", "does", "did", "can", "could")
QUESTION_WORDS = frozenset({*WH_WORDS, "whom", "whose", *YES_NO_OPENERS, "should", "would", "will"})
# Words that are never a keyword of a query.
QUERY_STOPWORDS = STOPWORDS | QUESTION_WORDS
# Verbs of saying and proposing: "Who <verb>s ...?" asks who said it (in a chat, a speaker).
SAYING_VERBS = ("proposes|proposed|suggests|suggested|asks|asked|invites|invited|initiates|initiated|"
                "starts|started|congratulates|congratulated|checks|checked|comes|came|recommends|"
                "recommended|mentions|mentioned|reminds|reminded|offers|offered|tells|told|says|said|"
                "shares|shared|thanks|thanked|wishes|wished|reports|reported|announces|announced|"
                "raises|raised|brings up|brought up|agrees|agreed|greets|greeted")

# Nouns that lead from a thing to another one: the people a work or a person is tied to, and
# what made or holds a thing. "The director of film X", "X's father", "whose composer": the
# answer lies in a second passage, reached from the named one (a bridge).
RELATION_NOUNS = re.compile(
    r"\b(?:director|directors|producer|composer|performer|author|writer|creator|founder|publisher|"
    r"company|father|mother|parent|parents|stepfather|stepmother|spouse|wife|husband|son|daughter|"
    r"child|children|sibling|brother|sister|grandfather|grandmother|grandson|granddaughter|uncle|"
    r"aunt|nephew|niece|cousin|whose)\b", re.IGNORECASE)

# The relation nouns a question can chain ("the director of film X", "X's father") and the kin
# words English defines through two of them ("paternal grandfather" = the father of the father):
# ``questions.first_hop`` resolves the inner link first (a bridge question).
HOP_NOUNS = ("director|producer|composer|performer|author|writer|creator|founder|publisher|editor|"
             "father|mother|parent|stepfather|stepmother|spouse|wife|husband|son|daughter|child|"
             "sibling|brother|sister|grandfather|grandmother|uncle|aunt")
KIN_HOPS = {"paternal grandfather": "father of the father", "paternal grandmother": "mother of the father",
            "maternal grandfather": "father of the mother", "maternal grandmother": "mother of the mother",
            "father-in-law": "father of the spouse", "mother-in-law": "mother of the spouse"}

# Question openings and the answer types they ask for (first match wins).
ANSWER_TYPES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), types) for pattern, types in (
        (r"\bwhat time\b|\bat what time\b|\bwhat hour\b", ("time",)),
        (r"\b(?:what|which) (?:day|date|month|weekday)\b|\bwhen\b", ("date", "time")),
        (r"\bwho\b|\bwhom\b|\bwhose\b|\bwith whom\b", ("person", "name")),
        (r"\bwhere\b|\bwhich (?:city|place|country|restaurant|cafe|shop|store)\b", ("location", "name")),
        (r"\bhow (?:much|many|long|far|old)\b|\bprice\b|\bcost\b", ("quantity",)),
        (r"\b(?:what|which) (?:song|movie|film|game|book|show|band|album|series)\b", ("title", "name")),
    ))

# Entity keys: the normalised name that identifies a surface entity, in the graph and in queries.
SPACES = re.compile(r"\s+")
EDGE_PUNCTUATION = " \t\"'`“”‘’.,;:!?()[]{}<>*#"
FUZZY_MIN = 90  # rapidfuzz ratio at which a query n-gram names a graph entity (questions.md)


def entity_key(name: str) -> str:
    """Case-folded name with collapsed whitespace and no surrounding punctuation."""
    return SPACES.sub(" ", name).strip(EDGE_PUNCTUATION).casefold()


WORD = re.compile(r"[a-z0-9]+")
STEM_SUFFIXES = ("ing", "ed", "es", "s")


@lru_cache(maxsize=1 << 17)  # a corpus repeats its words: stemming every chunk for the walk's BM25
def stem(word: str) -> str:
    """A crude stem: one of ``STEM_SUFFIXES`` off a word that keeps at least four letters
    ("reminded" → "remind", "sessions" → "session"), so that inflections match."""
    for suffix in STEM_SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def index_terms(text: str) -> list[str]:
    """A text's words as lexical search terms: lower-cased, stemmed, without stopwords,
    question words and one-letter words (``retrieve/lexical.py``)."""
    return [stem(w) for w in WORD.findall(text.lower()) if len(w) > 1 and w not in QUERY_STOPWORDS]


def names_a_relation(question: str) -> bool:
    """Whether the question asks across a relation (``RELATION_NOUNS``) rather than about the
    things it names."""
    return RELATION_NOUNS.search(question) is not None


def answer_types(question: str) -> tuple[str, ...]:
    """Types the answer is expected to have, from the question word."""
    return next((types for pattern, types in ANSWER_TYPES if pattern.search(question)), ())


def low_level(question: str, graph_names: list[str]) -> list[str]:
    """Low-level keywords: the question's specific terms, then the graph names found in it."""
    return list(dict.fromkeys(specific_terms(question) + graph_names))


def specific_terms(question: str) -> list[str]:
    """Name spans, quoted titles, dates, times and quantities the question mentions."""
    found = [m.group(m.lastindex or 0) for _, pattern in PATTERNS for m in pattern.finditer(question)]
    for match in NAME.finditer(question):
        words = [w for w in match.group().split() if w.lower() not in QUERY_STOPWORDS]
        if words:
            found.append(POSSESSIVE.sub("", " ".join(words)))
    return found


def question_grams(question: str) -> list[str]:
    """The question's word 1- to 3-grams that may name an entity (``NameMatcher``), sorted."""
    words = re.findall(r"[\w'\-]+", question)
    spans = {" ".join(words[i : i + n]) for n in (1, 2, 3) for i in range(len(words) - n + 1)}
    return sorted(g for g in spans if g.lower() not in QUERY_STOPWORDS and len(g) > 2)


class NameMatcher:
    """The graph's entity names, compacted once, for fuzzy matching of query n-grams."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self._keys = [entity_key(n).replace(" ", "") for n in self.names]

    def find(self, question: str) -> list[str]:
        """Entity names that occur in the question, spelling variants allowed."""
        if not self.names:
            return []
        grams = question_grams(question)
        if not grams:
            return []
        # One n-grams × names matrix; the best (first on ties) name per n-gram, as extractOne would.
        scores = process.cdist([entity_key(g).replace(" ", "") for g in grams], self._keys,
                               scorer=fuzz.ratio, score_cutoff=FUZZY_MIN, dtype=np.float32, workers=1)
        best = scores.argmax(axis=1)
        return [self.names[j] for i, j in enumerate(best) if scores[i, j] >= FUZZY_MIN]
