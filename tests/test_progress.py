"""The progress line that replaced tqdm: counts, draws on a terminal, stays silent when disabled."""

import io

from edge_rag.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_count_rate_and_postfix_on_a_terminal():
    out = Terminal()
    bar = Progress("indexing", "doc", total=3, interval=0, stream=out)
    bar.set_postfix(chunks=7)
    bar.update(2)
    bar.close()
    assert "indexing: 2/3 doc" in out.getvalue() and "chunks=7" in out.getvalue()
    assert out.getvalue().endswith("\r\033[K")


def test_disabled_progress_counts_silently():
    out = Terminal()
    bar = Progress("graph", "chunk", enabled=False, interval=0, stream=out)
    bar.update(5)
    bar.close()
    assert bar.done == 5 and out.getvalue() == ""
