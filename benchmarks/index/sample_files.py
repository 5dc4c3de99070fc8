"""Small real files of every readable format, written with the real libraries, each with a planted fact.

Used by the ``formats`` benchmark and the tests (``tests/test_formats.py``, ``tests/test_sync.py``):
PDFs with a text layer (fpdf2), an image-only scan (fpdf2 + Pillow), an encrypted PDF (pypdf),
Word (python-docx), HTML, e-mail (``email``: .eml, and an .mbox of many messages via
``mailbox``), Markdown, plain text and CSV. ``FACTS`` lists, per file, a question and the
source its answer must come from (top-1).
"""

from __future__ import annotations

import email.message
import json
import mailbox
import random
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Fact:
    """A planted fact: the question that finds it and the source it must come from."""

    format: str
    question: str
    source: str  # the end of the expected document's source


FACTS = [
    Fact("pdf", "Where does Ada keep her seven beehives?", "report.pdf#p1"),
    Fact("pdf", "Which town hosts the paper lantern festival in November?", "report.pdf#p2"),
    Fact("html", "When does the salt ferry to Vesteroy leave?", "ferry.html"),
    Fact("eml", "How many beeswax candles should go to the Lindqvist chapel?", "order.eml"),
    Fact("mbox", "Where is the orchard key hidden?", "letters.mbox#{planted}"),
    Fact("docx", "How many kilograms of quinces did Hallberg farm harvest?", "harvest.docx"),
    Fact("md", "Where does the kite club meet on Sundays?", "kites.md"),
    Fact("txt", "What does Bob tune his violin with?", "violin.txt"),
    Fact("csv", "Which instrument does Edda Moberg play?", "players.csv#1"),
]
UNREADABLE = ("scan.pdf", "locked.pdf")
TOPICS = ["budget", "roof repair", "school trip", "choir rehearsal", "bicycle loan", "library books",
          "garden allotment", "boat engine", "bakery order", "tax forms", "chess club", "vet visit",
          "train tickets", "birthday party", "wood delivery", "piano lessons", "photo album", "insurance"]
NAMES = ["Ingrid", "Tomas", "Leila", "Marek", "Sanna", "Joachim", "Priya", "Oskar", "Wen", "Dagny"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def write_all(folder: Path, messages: int = 1000, scratch: Path | None = None) -> None:
    """Every format into ``folder`` (PDFs need fpdf2 and pypdf, .docx python-docx)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_pdf(folder / "report.pdf")
    write_scan(folder / "scan.pdf", scratch or folder.parent)
    write_encrypted(folder / "report.pdf", folder / "locked.pdf")
    write_docx(folder / "harvest.docx")
    write_text_formats(folder)
    write_eml(folder / "order.eml")
    write_mbox(folder / "letters.mbox", messages)


def planted_message(messages: int) -> int:
    """The number of the mbox message that holds the planted fact."""
    return messages // 2


def write_pdf(path: Path) -> None:
    """Two pages of text with a title in the metadata."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_title("Apiary Report")
    pdf.set_font("helvetica", size=12)
    pdf.add_page()
    pdf.multi_cell(0, 8, "Apiary Report\nAda keeps her seven beehives behind the copper mill at Tromso "
                   "harbour. The honey is harvested in late August and sold at the Saturday market.")
    pdf.add_page()
    pdf.multi_cell(0, 8, "Festival notes\nThe paper lantern festival is held every November in the town of "
                   "Lillehammer, where children carry lanterns across the frozen lake.")
    pdf.output(str(path))


def write_scan(path: Path, scratch: Path) -> None:
    """A PDF whose only page is an image: no text layer."""
    from fpdf import FPDF
    from PIL import Image, ImageDraw

    image = scratch / "scan.png"
    picture = Image.new("RGB", (600, 200), "white")
    ImageDraw.Draw(picture).text((20, 80), "Scanned receipt: 3 jars of honey", fill="black")
    picture.save(image)
    pdf = FPDF()
    pdf.add_page()
    pdf.image(str(image), x=10, y=10, w=180)
    pdf.output(str(path))
    image.unlink()


def write_encrypted(source: Path, path: Path) -> None:
    """``source`` encrypted with a user password (RC4-128: pypdf writes it without extra packages)."""
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=str(source))
    writer.encrypt("secret", algorithm="RC4-128")
    writer.write(str(path))


def write_docx(path: Path) -> None:
    """A Word document with a heading, a paragraph and a table."""
    import docx

    document = docx.Document()
    document.add_heading("Hallberg Farm Harvest", 1)
    document.add_paragraph("The quince harvest at Hallberg farm yielded 312 kilograms this autumn, "
                           "picked by hand over three weekends.")
    table = document.add_table(rows=2, cols=2)
    for row, (fruit, weight) in enumerate([("quince", "312 kg"), ("pear", "95 kg")]):
        table.cell(row, 0).text, table.cell(row, 1).text = fruit, weight
    document.save(str(path))


def write_text_formats(folder: Path) -> None:
    """HTML, Markdown, plain text and CSV."""
    (folder / "ferry.html").write_text(
        "<!doctype html><html><head><title>Island Ferry Timetable</title><style>p {color: red}</style>"
        "<script>var tracking = 'the ferry leaves at noon';</script></head><body>"
        "<nav>Home | Timetables | Contact</nav><h1>Ferry</h1>"
        "<p>The salt ferry to Vesteroy leaves every morning at 7:40 from the north pier.</p>"
        "<footer>Copyright 2024 Ferry Company</footer></body></html>", encoding="utf-8")
    (folder / "kites.md").write_text("# Kite Club\n\nThe kite club meets on the dunes at Skagen every "
                                     "Sunday when the wind is westerly.\n", encoding="utf-8")
    (folder / "violin.txt").write_text("Bob's violin\nBob tunes his violin with a brass tuning fork "
                                       "that his grandfather brought from Cremona.\n", encoding="utf-8")
    players = ("name,instrument,town\nOla Berg,trumpet,Narvik\nEdda Moberg,cello,Bergen\n"
               "Kari Lunde,flute,Molde\n")
    (folder / "players.csv").write_text(players, encoding="utf-8")


def write_eml(path: Path) -> None:
    """One message with a plain-text body and an attachment."""
    message = _message("Candle order for the chapel", "bob@example.org",
                       "Please send 40 beeswax candles to the Lindqvist chapel by Friday.")
    message.add_attachment(b"PNG placeholder", maintype="image", subtype="png", filename="chapel.png")
    path.write_bytes(bytes(message))


def write_mbox(path: Path, messages: int, broken: int | None = None) -> None:
    """``messages`` everyday letters; one holds the planted fact, and ``broken`` (if given) is a
    multipart message without its boundary (it cannot be read; the others must still go in)."""
    rng = random.Random(42)
    box = mailbox.mbox(str(path))
    box.lock()
    try:
        for number in range(messages):
            if number == broken:
                box.add(_broken())
            elif number == planted_message(messages):
                box.add(_html_message("Where the orchard key is", "<p>The orchard key is hidden under the "
                                      "blue flowerpot beside the greenhouse door.</p>"))
            else:
                box.add(_everyday(rng, number))
        box.flush()
    finally:
        box.unlock()
        box.close()


def _everyday(rng: random.Random, number: int) -> email.message.EmailMessage:
    topic, name, day = rng.choice(TOPICS), rng.choice(NAMES), rng.choice(DAYS)
    body = (f"Hi, about the {topic}: {name} can help on {day}. We still need {rng.randint(2, 90)} "
            f"more and the note number is {number}. Best wishes.")
    return _message(f"{topic.capitalize()} ({number})", f"{name.lower()}@example.org", body)


def _message(subject: str, sender: str, body: str) -> email.message.EmailMessage:
    message = email.message.EmailMessage()
    message["Subject"], message["From"], message["To"] = subject, sender, "ada@example.org"
    message["Date"] = "Mon, 01 Jan 2024 10:00:00 +0000"
    message.set_content(body)
    return message


def _html_message(subject: str, html: str) -> email.message.EmailMessage:
    message = _message(subject, "gardener@example.org", "")
    message.set_content(f"<html><body>{html}</body></html>", subtype="html")
    return message


def _broken() -> email.message.Message:
    message = email.message.Message()
    message["Subject"] = "broken"
    message["Content-Type"] = "multipart/mixed"
    message.set_payload("garbage without any boundary line\n")
    return message


def write_renamed_zip(path: Path) -> None:
    """A zip of something else, named ``.docx``."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("photos/readme.txt", "holiday pictures")


def write_damaged_pdf(source: Path, path: Path) -> None:
    """The first 400 bytes of a real PDF: truncated, no page tree."""
    path.write_bytes(source.read_bytes()[:400])


def write_big_html(path: Path, mb: int, fact: str) -> None:
    """An HTML page of ``mb`` MB, nearly all inline script (as saved pages are), with one fact."""
    chunk = "<script>var data = '" + "x" * 4000 + "';</script>\n"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"<html><head><title>Saved page</title></head><body><p>{fact}</p>\n")
        for _ in range(mb * 2**20 // len(chunk)):
            handle.write(chunk)
        handle.write("</body></html>\n")


def write_json_strings(path: Path, count: int) -> None:
    """A JSON list of ``count`` strings (not records)."""
    path.write_text(json.dumps([f"line {n}" for n in range(count)]), encoding="utf-8")
