"""Containment without its artifacts: is the gold answer said in the answer?

The gold is found in the answer when its words occur there in order, with spaces between them
optional ("WolfgangSchulz" = "Wolfgang Schulz", "2pm" = "2 PM") but only at word boundaries
("no" is not in "opinion on", nor "art" in "party"); quotes are straightened ("Li Hua’s" =
"Li Hua's"), possessives and then apostrophes dropped. A gold of several parts ("A & B") needs each part; a
yes/no gold needs the answer to start with the same word. Dates and times are compared as
values, so a chat stamp "20260307_18:00" is found in "6 PM on March 7th" or "7 March 2026,
18:00": each date (a missing year matches any) and time (a time without AM/PM matches either)
of the gold must be in the answer, and the gold's other words too.
"""

from __future__ import annotations

import re

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december")
_MONTH = r"(?P<{}>" + "|".join(m[:3] + r"(?:" + m[3:] + r")?" for m in MONTHS) + r")\.?"
_DAY = r"(?P<{}>[0-3]?\d)(?:st|nd|rd|th)?"
DATES = [re.compile(p, re.IGNORECASE) for p in (
    r"\b(?P<y>(?:19|20)\d\d)(?P<m>[01]\d)(?P<d>[0-3]\d)(?:_(?P<h>[0-2]\d):?(?P<mi>[0-5]\d))?\b",
    r"\b" + _DAY.format("d") + r"\s+(?:of\s+)?" + _MONTH.format("mon") + r"(?:,?\s+(?P<y>\d{3,4}))?\b",
    r"\b" + _MONTH.format("mon") + r"\s+" + _DAY.format("d") + r"(?:,?\s+(?P<y>\d{3,4}))?\b")]
_CLOCK = r"(?P<{h}>[01]?\d|2[0-3])(?::(?P<{m}>[0-5]\d))?"
TIME_RANGE = re.compile(r"\b" + _CLOCK.format(h="h1", m="m1") + r"\s*(?:-|–|to)\s*"
                        + _CLOCK.format(h="h", m="mi") + r"\s*(?P<ap>[ap])\.?\s?m\b\.?", re.IGNORECASE)
TIMES = re.compile(r"\b" + _CLOCK.format(h="h", m="mi") + r"\s*(?P<ap>[ap])\.?\s?m\b\.?"
                   r"|\b(?P<h24>[01]?\d|2[0-3]):(?P<m24>[0-5]\d)\b|\b(?P<word>noon|midnight)\b",
                   re.IGNORECASE)
FILLER = frozenset(["a", "an", "the", "at", "on", "in", "of", "from", "to", "by", "around", "about",
                    "until", "and", "or"])
YES_NO = frozenset({"yes", "no"})
MISSING = re.compile(r"insufficient information|not (?:contain|mention|provide|specif|say|include)"
                     r"|no (?:information|mention)|does not (?:say|state)|cannot (?:be )?(?:determin|answer)"
                     r"|unknown|not (?:available|known)")


def contains(answer: str, gold: str, kind: str = "Single") -> bool:
    """Whether the answer says the gold (a Null question: whether it says the answer is missing)."""
    if kind == "Null":
        return MISSING.search(answer.lower()) is not None
    gold = re.sub(r"^\s*answer:\s*", "", gold, flags=re.IGNORECASE)
    return all(_part(answer, part) for part in re.split(r"\s+&\s+", gold) if part.strip())


def words(text: str) -> list[str]:
    """Lower-case words: quotes straightened, apostrophes dropped, other punctuation a break,
    articles left out."""
    text = text.lower().translate(str.maketrans("’‘ʼ`", "''''"))
    text = re.sub(r"'s\b", "", text).replace("'", "")
    return [w for w in re.findall(r"[^\W_]+", text) if w not in {"a", "an", "the"}]


def said(answer: list[str], gold: list[str]) -> bool:
    """Whether the gold words occur in the answer words in order, spaces optional, at word
    boundaries on both ends."""
    target = "".join(gold)
    if not target:
        return False
    text, starts, ends = "", set(), set()
    for word in answer:
        starts.add(len(text))
        text += word
        ends.add(len(text))
    return any(m.start() in starts and m.start() + len(target) in ends
               for m in re.finditer(f"(?={re.escape(target)})", text))


def _part(answer: str, gold: str) -> bool:
    gold_words = words(gold)
    if len(gold_words) == 1 and gold_words[0] in YES_NO:
        return words(answer)[:1] == gold_words
    if said(words(answer), gold_words):
        return True
    wanted, rest = moments(gold)
    if not wanted:
        return False
    have, _ = moments(answer)
    answer_words = set(words(answer))
    return all(any(_same(w, h) for h in have) for w in wanted) and \
        all(w in answer_words for w in words(rest) if w not in FILLER)


def moments(text: str) -> tuple[list[tuple], str]:
    """The dates ``("d", year|None, month, day)`` and times ``("t", minutes, exact)`` of a text,
    and the text with them cut out."""
    found: list[tuple] = []

    def cut(pattern: re.Pattern[str], text: str) -> str:
        return pattern.sub(lambda m: (found.extend(_values(m)), " ")[1], text)

    for pattern in (*DATES, TIME_RANGE, TIMES):
        text = cut(pattern, text)
    return found, text


def _values(match: re.Match[str]) -> list[tuple]:
    parts = {k: v for k, v in match.groupdict().items() if v}
    out: list[tuple] = []
    if "d" in parts:
        month = int(parts["m"]) if "m" in parts else _month(parts["mon"])
        year = int(parts["y"]) if "y" in parts else None
        if 1 <= month <= 12 and 1 <= int(parts["d"]) <= 31:
            out.append(("d", year, month, int(parts["d"])))
    if "h1" in parts:
        out.append(_time(parts["h1"], parts.get("m1"), parts["ap"]))
    if "h" in parts:  # a chat stamp's time is on a 24-hour clock
        out.append(_time(parts["h"], parts.get("mi"), parts.get("ap") or ("" if "m" in parts else None)))
    if "h24" in parts:
        out.append(_time(parts["h24"], parts["m24"], None))
    if "word" in parts:
        out.append(("t", 720 if parts["word"].lower() == "noon" else 0, True))
    return out


def _month(name: str) -> int:
    return next((i for i, m in enumerate(MONTHS, 1) if m.startswith(name.lower()[:3])), 0)


def _time(hour: str, minute: str | None, meridiem: str | None) -> tuple:
    h, m = int(hour), int(minute or 0)
    if meridiem:
        h = h % 12 + (12 if meridiem.lower() == "p" else 0)
    # A clock time without AM/PM below 13:00 may be either ("5:30" for 17:30); "" is a 24-hour one.
    return ("t", h * 60 + m, meridiem is not None or h >= 13 or h == 0)


def _same(wanted: tuple, have: tuple) -> bool:
    if wanted[0] != have[0]:
        return False
    if wanted[0] == "d":
        return wanted[2:] == have[2:] and (None in (wanted[1], have[1]) or wanted[1] == have[1])
    exact = wanted[2] and have[2]
    return wanted[1] == have[1] or (not exact and wanted[1] % 720 == have[1] % 720)
