"""What reading one source may cost: bytes per document and, for a container (zip, ``.docx``, PDF,
mbox), the bytes its members inflate to together and how many members (pages, messages) it holds.

A container is checked twice: from what it declares before anything is inflated (a zip's
directory, a PDF's page count, an mbox's size), then while it is read, byte by byte, since a
declaration can lie. Over either, the container is one refused document naming the setting
(``max_document_mb``, ``max_inflated_mb``, ``max_members``).

Design: docs/design/index.md
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import IO

from ..config import Settings
from ..errors import BadDocument

MB = 1 << 20  # bytes in a MiB, as the settings count them (index.md)
END_RECORD = b"PK\x05\x06"
END_RECORD64 = b"PK\x06\x06"
TAIL = 22 + 0xFFFF  # the end record and the longest comment after it (the zip format's)


@dataclass(frozen=True)
class Limits:
    """The profile's limits in bytes and members."""

    document: int
    inflated: int = int(Settings.max_inflated_mb * MB)
    members: int = Settings.max_members

    @classmethod
    def of(cls, settings: Settings) -> Limits:
        """The limits of a profile."""
        return cls(int(settings.max_document_mb * MB), int(settings.max_inflated_mb * MB),
                   settings.max_members)


def as_limits(limits: Limits | int) -> Limits:
    """``limits``, or a document limit in bytes with the default container budget."""
    return limits if isinstance(limits, Limits) else Limits(limits)


@dataclass
class Budget:
    """One container's running count: its members' bytes as they are inflated (a member read
    twice, as a document is to hash it then chunk it, counts once: its furthest byte)."""

    source: str
    limits: Limits
    inflated: int = 0
    _reached: dict[str, int] = field(default_factory=dict)

    def declare(self, members: int, inflated: int) -> None:
        """Refuse from what the container declares, before reading it."""
        if members > self.limits.members:
            raise BadDocument(f"{self.source}: {members:,} members (files, pages or messages), over "
                              f"the limit of {self.limits.members:,} (setting max_members); refused")
        self._check(inflated, "declares")

    def reach(self, member: str, count: int) -> None:
        """Note that ``member`` was read up to byte ``count``; refuse once the total is over."""
        before = self._reached.get(member, 0)
        if count > before:
            self._reached[member] = count
            self.inflated += count - before
            self._check(self.inflated, "inflates to")

    def remaining(self) -> int:
        """Bytes the container may still inflate to (at least 1)."""
        return max(1, self.limits.inflated - self.inflated)

    def refusal(self, verb: str = "inflates to") -> BadDocument:
        """The error of a container over its inflated bytes."""
        return BadDocument(f"{self.source}: {verb} more than the {self.limits.inflated / MB:.0f} MB "
                           "its members may inflate to together (setting max_inflated_mb); refused")

    def _check(self, size: int, verb: str) -> None:
        if size > self.limits.inflated:
            raise self.refusal(verb)


def zip_entries(handle: IO[bytes]) -> int:
    """The number of entries a zip's end record declares, read before ``zipfile`` builds one
    object per entry (0 when there is no end record: ``zipfile`` then says what is wrong)."""
    handle.seek(0, 2)
    size = handle.tell()
    handle.seek(max(0, size - TAIL))
    tail = handle.read()
    at = tail.rfind(END_RECORD)
    if at < 0 or len(tail) < at + 22:
        return 0
    entries = struct.unpack_from("<H", tail, at + 10)[0]
    zip64 = tail.rfind(END_RECORD64, 0, at)
    if entries == 0xFFFF and zip64 >= 0 and len(tail) >= zip64 + 40:
        entries = struct.unpack_from("<Q", tail, zip64 + 32)[0]
    return int(entries)
