"""The answer stage: grounded answers from retrieved context (``focused.py``)."""

from .focused import (
    ONLY_CITATIONS,
    Answer,
    Answerer,
    AnswerStream,
    Evidence,
    FocusedAnswerer,
    Prepared,
    dates_in,
    document_days,
    missing_date,
    on_days,
    quote,
    rest_of_copy,
    source_sentence,
)

__all__ = ["ONLY_CITATIONS", "Answer", "AnswerStream", "Answerer", "Evidence", "FocusedAnswerer", "Prepared",
           "dates_in", "document_days", "missing_date", "on_days", "quote", "rest_of_copy", "source_sentence"]
