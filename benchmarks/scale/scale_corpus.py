"""The scale benchmark's corpora: LiHua-World first, then distractors up to N times its size.

Distractors come in a fixed order so every size is a prefix of the next (the 3× corpus is the
first part of the 10×): the other offline corpora (2Wiki's passages, HotpotQA's paragraphs,
MultiHop-RAG's evidence texts), then chats generated from a seed in LiHua-World's shape. A
generated "world" is one invented person's year of conversations with a couple of dozen invented
contacts about invented places and plans (about LiHua-World's size, so names recur as they do
there); worlds differ by seed. Nothing is copied from LiHua's lines, and the generated headers are
dated 2010-2025, never LiHua's 2026, so no distractor can pass for an evidence conversation.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator

from benchmarks.core.datasets import DATASETS
from edge_rag import Document

SEED = 46
CONVERSATIONS_PER_WORLD = 440
SYLLABLES = ("ka", "ri", "mo", "ne", "ta", "lu", "sa", "vi", "do", "re", "mi", "la", "jo", "an", "el",
             "ur", "is", "ha", "be", "co", "fe", "ga", "ni", "po", "qu", "ze", "ya", "wen", "tor",
             "bel", "dar", "mar", "son", "ley", "vin", "ric", "ola", "ena", "ita", "ard", "ell")
SURNAME_ENDS = ("son", "berg", "wood", "ley", "ford", "man", "ski", "ton", "ez", "ova", "er", "ini")
PLACES = ("Café", "Park", "Library", "Market", "Gym", "Studio", "Bistro", "Hall", "Gallery", "Garden",
          "Bakery", "Pool", "Clinic", "Theatre", "Bookshop", "Pier")
PLACE_WORDS = ("Maple", "Harbor", "Juniper", "Copper", "Willow", "Lantern", "Orchard", "Summit", "Cedar",
               "Meadow", "Falcon", "Granite", "Saffron", "Ivory", "Beacon", "Thistle", "Marigold", "Quarry")
ACTIVITIES = ("a pottery class", "the board game night", "a trail run", "the farmers market",
              "a salsa lesson", "the chess club", "a bike repair workshop", "the book club",
              "a sourdough course",
              "the jazz concert", "a climbing session", "the photography walk", "a volunteer shift",
              "the quiz night", "a yoga class", "the film screening", "a kayak trip", "the science talk",
              "a knitting circle", "the community clean-up", "a wine tasting", "the robotics meetup")
ITEMS = ("a spare umbrella", "the projector", "two folding chairs", "the camping stove", "a blue notebook",
         "the extension cord", "some homemade jam", "the tent pegs", "a birthday card", "the spare keys",
         "a bag of oranges", "the drill", "a thermos", "the tickets", "a map of the trail", "the charger")
ROLES = ("neighbour", "colleague", "cousin", "landlord", "coach", "old classmate", "teammate", "dentist",
         "friend from the choir", "manager", "sister", "flatmate")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
OPENERS = (
    "Hi {b}! Are we still on for {act} at {place} on {day}?",
    "Hey {b}, quick question: could I borrow {item} before {day}?",
    "Morning {b}! I just booked {act} at {place} for {time}. Want to join?",
    "{b}, did you hear that {place} is closing early on {day}?",
    "Hello {b}! I left {item} at {place}, any chance you saw it?",
    "Hey {b}, my {role} {c} suggested {act} this {day}. Thoughts?",
)
REPLIES = (
    "Sounds good, {a}! {time} works for me, I'll meet you by the entrance.",
    "Oh no, I can't on {day}. How about {day2} at {time} instead?",
    "Yes! I'll bring {item} so we don't forget it this time.",
    "I think {c} is coming too, she mentioned it at {place} yesterday.",
    "Sure thing. I'll text {c} and ask if {place} has space for {n} people.",
    "Haha, I was about to ask you the same. Let's do {time}.",
    "I saw {item} on the bench at {place}, I'll keep it for you.",
    "Count me in! Last time at {place} was great, especially {act}.",
)
FOLLOWUPS = (
    "Perfect. I'll reserve a table at {place2} afterwards, they close at {time2}.",
    "Great, I'll tell {c} to bring {item}.",
    "Don't forget it costs {price} dollars each, cash only at {place}.",
    "By the way, {c} says the bus to {place} leaves every {mins} minutes on {day}.",
    "Noted! I'll put it in my calendar for {day} at {time}.",
    "Also, my {role} {c} wants to know if {act} is beginner friendly.",
    "Let's meet at {place2} first, it's on the way.",
)
CLOSERS = ("See you then, {b}!", "Thanks {a}, talk soon!", "Great, see you {day}!",
           "Perfect, I'll let you know if anything changes.", "Awesome, looking forward to it!")


def documents(times: float, lihua: list[Document] | None = None) -> list[Document]:
    """LiHua-World's conversations, then distractors, until the text is ``times`` LiHua's bytes."""
    lihua = lihua if lihua is not None else DATASETS["lihua"].documents()
    target, out = times * text_bytes(lihua), list(lihua)
    total = text_bytes(out)
    for doc in distractors():
        if total >= target:
            break
        out.append(doc)
        total += _size(doc)
    return out


def text_bytes(docs: list[Document]) -> int:
    """UTF-8 bytes of the documents' text."""
    return sum(_size(d) for d in docs)


def _size(doc: Document) -> int:
    return sum(len(block.encode("utf-8")) for block in doc.blocks())


def distractors() -> Iterator[Document]:
    """Every distractor in order: the other corpora, then generated worlds without end."""
    yield from DATASETS["2wiki"].documents()
    yield from DATASETS["hotpotqa"].documents()
    yield from DATASETS["multihop"].documents()
    world = 0
    while True:
        yield from generated_world(world)
        world += 1


def generated_world(world: int, conversations: int = CONVERSATIONS_PER_WORLD) -> list[Document]:
    """One invented person's year of chats (deterministic for a world number)."""
    rng = random.Random(SEED * 1_000_003 + world)
    people = _people(rng, 24)
    places = [f"{rng.choice(PLACE_WORDS)} {rng.choice(PLACES)}" for _ in range(30)]
    year = 2010 + world % 16
    docs = []
    for n in range(conversations):
        day_of_year = n * 365 // conversations
        text = _conversation(rng, people, places, year, day_of_year)
        docs.append(Document.from_text(text, f"scale/world{world}/{n:04d}.txt"))
    return docs


def _people(rng: random.Random, count: int) -> list[str]:
    names: dict[str, None] = {}
    while len(names) < count:
        first = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 2, 3)))).capitalize()
        last = (rng.choice(SYLLABLES) + rng.choice(SURNAME_ENDS)).capitalize()
        names[f"{first}{last}"] = None
    return list(names)


def _conversation(rng: random.Random, people: list[str], places: list[str], year: int, day: int) -> str:
    month, dom = 1 + min(11, day // 31), 1 + day % 28
    header = f"Time: {year}{month:02d}{dom:02d}_{rng.randint(7, 21):02d}:{rng.choice((0, 15, 30, 45)):02d}"
    owner = people[0]
    other, third = rng.sample(people[1:], 2)
    lines = [header, f"{owner}: " + _fill(rng.choice(OPENERS), rng, other, other, third, places)]
    speakers = [other, owner]
    for turn in range(rng.randint(8, 22)):
        template = rng.choice(REPLIES if turn % 3 == 0 else FOLLOWUPS + REPLIES)
        speaker, listener = speakers[turn % 2], speakers[1 - turn % 2]
        lines.append(f"{speaker}: " + _fill(template, rng, listener, listener, third, places))
    lines.append(f"{owner}: " + _fill(rng.choice(CLOSERS), rng, other, other, third, places))
    return "\n".join(lines) + "\n"


def _fill(template: str, rng: random.Random, a: str, b: str, c: str, places: list[str]) -> str:
    slots = {"a": a, "b": b, "c": c, "place": rng.choice(places), "place2": rng.choice(places),
             "act": rng.choice(ACTIVITIES), "item": rng.choice(ITEMS), "role": rng.choice(ROLES),
             "day": rng.choice(WEEKDAYS), "day2": rng.choice(WEEKDAYS), "n": rng.randint(2, 9),
             "time": _clock(rng), "time2": _clock(rng), "price": rng.randint(5, 60),
             "mins": rng.choice((10, 15, 20, 30))}
    return template.format(**slots)


def _clock(rng: random.Random) -> str:
    return f"{rng.randint(1, 12)}:{rng.choice(('00', '15', '30', '45'))} {rng.choice(('AM', 'PM'))}"


def describe(docs: list[Document]) -> dict[str, int]:
    """Documents and bytes of each source family in a corpus."""
    out: dict[str, int] = {}
    for doc in docs:
        family = doc.source.split("/", 1)[0]
        out[family] = out.get(family, 0) + _size(doc)
    return out


def main(argv: list[str] | None = None) -> int:
    """Print each size's documents, text bytes and bytes per source family, then a generated chat."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,3,10,30", help="sizes, × LiHua-World (default: %(default)s)")
    args = parser.parse_args(argv)
    for size in (int(s) for s in args.sizes.split(",")):
        corpus = documents(size)
        print(size, len(corpus), text_bytes(corpus), json.dumps(describe(corpus)))
    print("".join(generated_world(0)[5].blocks()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
