"""Hostile server: every attack of issue 61 against a real ``edge-rag serve`` on 127.0.0.1.

    python -m benchmarks.hostile_server [--profile dev] [--only NAME ...] [--work DIR]

The demo's LiHua-World conversations (``export/demo/``) are indexed into a fresh index, served
without a token on loopback (the default a household board runs), and attacked over real HTTP
as a web page in the owner's browser, a DNS-rebinding page, an uploader of bombs or a flood of
connections would. Each row says what was sent, what came back and whether it held against the
issue's thresholds: cross-origin and rebound requests 403 with nothing written; bombs refused in
at most 10 s with the server's RSS growing at most 300 MiB; a timed-out upload leaves the index as
it was; a ``/health`` flood does not make a token-holder's retrieve fail; 1,500 slow connections
leave ``/health`` answering and the log under 1 MB; a word of 2 MB leaves answers working; a
deleted phrase is in no file of the index folder while the server runs and after ``kill -9``; a
32-character passphrase is derived (PBKDF2), not taken as a raw key; key and token files others
can read, and a one-character passphrase, are refused.

``tests/test_attacks.py`` runs the same functions and asserts the same thresholds. Writes
``hostile_server.json`` and ``hostile_server.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import io
import json
import os
import random
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edge_rag import EdgeRAG

from .common import RESULTS, ROOT, markdown_table, options, percentiles, write_result

DEMO = ROOT / "export" / "demo" / "LiHua-World"
TOKEN = "hostile-benchmark-token-0123456789"
QUESTION = "When does Li Hua check in with Adam about moving in?"
REFUSE_SECONDS = 10.0
RSS_GROWTH_MIB = 300.0
LOG_BYTES = 1 << 20
SLOW_CONNECTIONS = 1500
SLOW_SECONDS = 20.0
MB = 1 << 20
Row = dict[str, Any]


# -- the server --------------------------------------------------------------------------------

class Served:
    """``edge-rag serve --json`` in a subprocess on a free loopback port; its stderr kept in a
    file (its size is the log's)."""

    def __init__(self, index: Path, profile: Path | str, *extra: str, token: str | None = None,
                 open_files: int | None = None, work: Path | None = None) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("EDGE_RAG_TOKEN", None)
        if token:
            env["EDGE_RAG_TOKEN"] = token
        self.token, self.index = token, index
        self.log = Path(tempfile.mkstemp(prefix="edge-rag-serve-", suffix=".log", dir=work)[1])
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "edge_rag.cli", "serve", "--index", str(index), "--profile",
                 str(profile), "--port", "0", "--json", *extra], stdout=subprocess.PIPE, stderr=log,
                env=env, cwd=ROOT, preexec_fn=_soft_open_files(open_files))
        line = self.process.stdout.readline().decode() if self.process.stdout else ""
        if not line:
            code = self.process.wait(60)
            raise RuntimeError(f"the server did not start (exit {code}): {self.log.read_text()[-2000:]}")
        url = json.loads(line)["url"]
        self.host, self.port = url.removeprefix("http://").rsplit(":", 1)[0], int(url.rsplit(":", 1)[1])

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self.process.pid

    def request(self, method: str, path: str, body: Any = None, *, token: bool = True,
                headers: dict[str, str] | None = None, raw: bytes | None = None,
                timeout: float = 600) -> tuple[int, bytes]:
        """One request on a new connection: (status, body); ``raw`` is sent as it is."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        sent = {"Content-Type": "application/json", **(headers or {})}
        if token and self.token:
            sent["Authorization"] = f"Bearer {self.token}"
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            connection.request(method, path, data, sent)
            reply = connection.getresponse()
            return reply.status, reply.read()
        finally:
            connection.close()

    def documents(self) -> list[str]:
        """The ids of every stored document."""
        status, body = self.request("GET", "/v1/documents")
        assert status == 200, body
        return [d["doc_id"] for d in json.loads(body)["data"]]

    def upload(self, name: str, data: bytes, timeout: float = 600) -> tuple[int, bytes]:
        """A multipart upload of one file."""
        body, kind = multipart(name, data)
        return self.request("POST", "/v1/documents", raw=body, headers={"Content-Type": kind},
                            timeout=timeout)

    def log_bytes(self) -> int:
        """Bytes the server wrote to stderr so far."""
        return self.log.stat().st_size

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Signal the server and wait for its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(60)
        self.log.unlink(missing_ok=True)
        return code


def _soft_open_files(limit: int | None) -> Callable[[], None] | None:
    """A pre-exec hook that lowers the child's soft limit on open files (a board's 1,024)."""
    if limit is None:
        return None
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE,
                                      (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def multipart(name: str, data: bytes) -> tuple[bytes, str]:
    """A multipart/form-data body holding one file, and its content type."""
    boundary = f"edge-rag-hostile-{time.time_ns()}"
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n").encode()
    return head + data + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def status_kib(pid: int, field: str) -> int:
    """A field of /proc/PID/status in KiB (VmRSS, VmHWM), 0 where there is none."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in lines if line.startswith(f"{field}:")), 0)


def open_files_limit(pid: int) -> int:
    """The process's soft limit on open files (from /proc/PID/limits; 0 if unknown)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
            if line.startswith("Max open files"):
                return int(line.split()[3])
    return 0


def index_files_holding(folder: Path, needles: list[bytes]) -> dict[str, list[str]]:
    """Every file of the index folder (its subfolders too) that holds one of the byte strings."""
    found = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        with contextlib.suppress(OSError):
            data = path.read_bytes()
            if hits := [n.decode() for n in needles if n in data]:
                found[str(path.relative_to(folder))] = hits
    return found


def lihua_index(folder: Path) -> Path:
    """The demo's 35 LiHua-World conversations indexed into ``folder/lihua`` (once)."""
    index = folder / "lihua"
    if not (index / "index.sqlite").is_file():
        with EdgeRAG.open(index, progress=False) as rag:
            assert rag.insert(*sorted(DEMO.rglob("*.txt"))).ok
    return index


def copy_index(index: Path, target: Path) -> Path:
    """A private copy of an index for one server."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(index, target, ignore=shutil.ignore_patterns("*.lock"))
    return target


# -- the files ----------------------------------------------------------------------------------

def zip_bytes(members: list[tuple[str, bytes, int, int]]) -> bytes:
    """A zip of (name, raw deflate data, CRC-32, size declared) members, written by hand: a
    member deflated once can be repeated, and a declared size can lie."""
    out, central = bytearray(), bytearray()
    for name, data, crc, size in members:
        raw, offset = name.encode(), len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(data), size, len(raw),
                           0) + raw + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, crc, len(data),
                               size, len(raw), 0, 0, 0, 0, 0, offset) + raw
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(out), 0)
    return bytes(out + central + end)


def deflated(unit: bytes, size: int, piece: int = 16 * MB) -> tuple[bytes, int]:
    """Raw deflate of ``unit`` repeated to ``size`` bytes (whole pieces), from one piece deflated
    once and repeated (a full flush makes each piece stand alone), and its CRC-32."""
    block = unit * (piece // len(unit))
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    count, crc = size // len(block), 0
    for _ in range(count):
        crc = zlib.crc32(block, crc)
    return packed * count + zlib.compressobj(9, zlib.DEFLATED, -15).flush(), crc


def member(name: str, data: bytes) -> tuple[str, bytes, int, int]:
    """A zip member of real bytes, deflated."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return name, compressor.compress(data) + compressor.flush(), zlib.crc32(data), len(data)


def docx_bomb(media_bytes: int = 1024 * MB) -> bytes:
    """A Word document whose relationships point at a ``media/`` member of ``media_bytes`` zeros
    (about a thousandth of that on disk)."""
    import docx

    word = docx.Document()
    word.add_paragraph("The orchard report: the quince trees flowered late this year.")
    buffer = io.BytesIO()
    word.save(buffer)
    members = []
    with zipfile.ZipFile(buffer) as package:
        for info in package.infolist():
            data = package.read(info)
            if info.filename == "word/_rels/document.xml.rels":
                data = data.replace(b"</Relationships>", b'<Relationship Id="rIdBomb" Type="http://schemas.'
                                    b'openxmlformats.org/officeDocument/2006/relationships/image" '
                                    b'Target="media/image1.png"/></Relationships>')
            if info.filename == "[Content_Types].xml":
                data = data.replace(b"<Default ", b'<Default Extension="png" ContentType="image/png"/>'
                                    b"<Default ", 1)
            members.append(member(info.filename, data))
    media, crc = deflated(b"\0", media_bytes)
    return zip_bytes([*members, ("word/media/image1.png", media, crc, media_bytes)])


def zip_of_text(files: int = 6, each: int = 15 * MB) -> bytes:
    """A zip of ``files`` text files of ``each`` bytes (a few hundred KB on disk)."""
    line = b"The harvest ledger lists the quince, pear and apple crates sent to the market.\n"
    data, crc = deflated(line, each, piece=len(line) * 4096)
    size = len(line) * 4096 * (each // (len(line) * 4096))
    return zip_bytes([(f"ledger-{n}.txt", data, crc, size) for n in range(files)])


def lying_zip(real: int = 200 * MB, declared: int = 1000) -> bytes:
    """A zip whose one text member says it holds ``declared`` bytes and inflates to ``real``."""
    data, crc = deflated(b"lie ", real)
    return zip_bytes([("notes.txt", data, crc, declared)])


def pdf_bomb(pages: int = 20, stream_bytes: int = 74 * MB) -> bytes:
    """A PDF of ``pages`` pages of text, each with a content stream inflating to ``stream_bytes``
    (one zlib stream, repeated in every page's own object)."""
    unit = b"BT /F1 12 Tf 72 712 Td (quince) Tj ET\n"
    stream = zlib.compress(unit * (stream_bytes // len(unit)), 9)
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % (4 + 2 * n) for n in range(pages))
               + b"] /Count %d >>" % pages, b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    for n in range(pages):
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font "
                       b"<< /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * n))
        objects.append(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream
                       + b"\nendstream")
    return _pdf(objects)


def _pdf(objects: list[bytes]) -> bytes:
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def long_word(size: int = 2 * MB, seed: int = 61) -> bytes:
    """One word of ``size`` random letters: a document without whitespace."""
    rng = random.Random(seed)
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(size)).encode()


def slow_text(size: int = 4 * MB, seed: int = 7) -> bytes:
    """Lines of random words: legal text that takes the embedder a while."""
    rng = random.Random(seed)
    words = [w for w in (DEMO / "week1" / "20260105_1100.txt").read_text().split() if w.isalpha()]
    lines, total = [], 0
    while total < size:
        line = " ".join(rng.choice(words) for _ in range(14))
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines).encode()


# -- the attacks ----------------------------------------------------------------------------------

def cross_origin(server: Served) -> Row:
    """A web page's requests to a server without a token: text/plain and form POSTs and a JSON
    POST from another Origin (as a page's fetch sends them), and a text/plain POST without one."""
    before = server.documents()
    planted = {"text": "Planted by a web page: the spare key is under the blue flowerpot.",
               "source": "planted.txt"}
    evil = {"Origin": "http://evil.example", "Content-Type": "text/plain"}
    body, kind = multipart("planted.txt", planted["text"].encode())
    asked = {"messages": [{"role": "user", "content": QUESTION}]}
    statuses = [server.request("POST", "/v1/documents", planted, headers=evil)[0],
                server.request("POST", "/v1/chat/completions", asked, headers=evil)[0],
                server.request("POST", "/v1/documents", raw=body,
                               headers={"Origin": "http://evil.example", "Content-Type": kind})[0],
                server.request("POST", "/v1/documents", planted, headers={"Origin": "http://evil.example"})[0],
                server.request("POST", "/v1/documents", planted, headers={"Content-Type": "text/plain"})[0]]
    written = len(server.documents()) - len(before)
    held = statuses[:4] == [403] * 4 and statuses[4] == 415 and written == 0
    return {"attack": "cross-origin POSTs to a server without a token", "statuses": statuses,
            "documents_written": written, "result": f"{statuses}, {written} written", "held": held}


def rebinding(server: Served) -> Row:
    """Requests that name the server ``rebind.evil.example`` (a page after DNS rebinding)."""
    secret = "The safe's code is 4-7-1-9, written on the back of the calendar."
    status, body = server.request("POST", "/v1/documents", {"text": secret, "source": "safe.txt"})
    doc_id = json.loads(body)["added"][0]
    rebound = {"Host": f"rebind.evil.example:{server.port}"}
    asked = {"question": "What is the safe's code?"}
    replies = [server.request("GET", "/v1/documents", headers=rebound),
               server.request("POST", "/v1/retrieve", asked, headers=rebound),
               server.request("GET", "/health", headers=rebound), server.request("GET", "/", headers=rebound)]
    leaked = any(b"4-7-1-9" in reply or b"safe.txt" in reply for _, reply in replies)
    allowed = server.request("GET", "/v1/documents", headers={"Host": f"localhost:{server.port}"})[0]
    server.request("DELETE", f"/v1/documents/{doc_id}")
    statuses = [s for s, _ in replies]
    return {"attack": "DNS rebinding: Host rebind.evil.example", "statuses": statuses, "leaked": leaked,
            "localhost_status": allowed, "result": f"{statuses}, leaked {leaked}",
            "held": statuses == [403] * 4 and not leaked and allowed == 200}


def bomb(server: Served, name: str, data: bytes, attack: str) -> Row:
    """Upload one bomb: the seconds to the answer, the server's RSS growth (its peak over its
    resident size before), what was written."""
    before = server.documents()
    rss = status_kib(server.pid, "VmRSS")
    with contextlib.suppress(OSError):
        Path(f"/proc/{server.pid}/clear_refs").write_text("5")  # the peak starts again from now
    start = time.perf_counter()
    status, body = server.upload(name, data)
    seconds = time.perf_counter() - start
    growth = max(0, status_kib(server.pid, "VmHWM") - rss) / 1024
    written = len(server.documents()) - len(before)
    message = json.loads(body).get("error", {}).get("message", "") if status != 201 else ""
    held = status == 400 and seconds <= REFUSE_SECONDS and growth <= RSS_GROWTH_MIB and written == 0
    return {"attack": attack, "bytes": len(data), "status": status, "seconds": round(seconds, 2),
            "rss_growth_mib": round(growth, 1), "documents_written": written, "message": message,
            "result": f"{status} in {seconds:.1f} s, RSS +{growth:.0f} MiB: {_reason(message)}", "held": held}


def _reason(message: str) -> str:
    """A refusal without the file's name."""
    return message.split(": ", 1)[-1].removesuffix("; refused")


def docx_attack(server: Served) -> Row:
    """The DOCX whose relationships point at a 1 GB media member."""
    return bomb(server, "report.docx", docx_bomb(), "a DOCX pointing at a 1 GB media/ member")


def zip_attack(server: Served) -> Row:
    """The zip of six 15 MB text files."""
    return bomb(server, "ledgers.zip", zip_of_text(), "a zip of six 15 MB text files")


def lying_zip_attack(server: Served) -> Row:
    """The zip member that says 1,000 bytes and inflates to 200 MB."""
    return bomb(server, "notes.zip", lying_zip(), "a zip member declaring 1,000 bytes, inflating to 200 MB")


def pdf_attack(server: Served) -> Row:
    """The PDF of 20 pages of 74 MB streams."""
    return bomb(server, "scan.pdf", pdf_bomb(), "a PDF of 20 pages of 74 MB streams")


def timed_out_upload(server: Served, timeout: float) -> Row:
    """A zip of three small notes and a 4 MB text past the server's ``--timeout``: the insert
    stops at the next group of chunks and rolls the whole upload back; the next insert runs at
    once (it must finish within the same time limit)."""
    before = server.documents()
    counts = _counts(server)
    notes = [member(f"note-{n}.txt", f"Note {n}: the ferry leaves at {n + 6} o'clock.".encode())
             for n in range(3)]
    data = zip_bytes([*notes, member("zz-long.txt", slow_text())])
    start = time.perf_counter()
    status, _ = server.upload("bundle.zip", data)
    seconds = time.perf_counter() - start
    same = server.documents() == before and _counts(server) == counts
    small, reply = server.request("POST", "/v1/documents", {"text": "The kettle is descaled monthly.",
                                                            "source": "kettle.txt"})
    with contextlib.suppress(KeyError, ValueError):
        server.request("DELETE", f"/v1/documents/{json.loads(reply)['added'][0]}")
    held = status == 504 and same and small == 201
    return {"attack": f"an upload past the {timeout:.0f} s time limit", "status": status,
            "seconds": round(seconds, 1), "index_as_it_was": same, "next_insert_status": small,
            "result": f"{status} after {seconds:.1f} s, index unchanged {same}, next insert {small}",
            "held": held}


def _counts(server: Served) -> dict[str, int]:
    status, body = server.request("GET", "/health")
    index = json.loads(body)["index"]
    return {k: index[k] for k in ("documents", "chunks")}


FLOOD = """
import http.client, json, sys, threading
host, port, requests, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
statuses = []
def ask():
    try:
        connection = http.client.HTTPConnection(host, port, timeout=60)
        connection.request("GET", "/health")
        reply = connection.getresponse()
        body = reply.read()
        statuses.append(-1 if reply.status == 200 and json.loads(body) != {"status": "ok"} else reply.status)
    except (OSError, http.client.HTTPException):
        statuses.append(0)
for _ in range(rounds):
    threads = [threading.Thread(target=ask) for _ in range(requests)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
print(json.dumps(statuses))
"""


def health_flood(server: Served, requests: int = 150, rounds: int = 4) -> Row:
    """``requests`` concurrent ``/health`` without the token, ``rounds`` times, from another
    process, while a token-holder retrieves; then the same retrieves alone. A flooding request
    may meet the concurrency limit (503); one that says more than that the server is up fails."""
    asked = {"question": QUESTION, "method": "vector", "top_k": 3}
    retrieve = lambda: _timed(lambda: server.request("POST", "/v1/retrieve", asked)[0])
    retrieve()  # warm
    flooder = subprocess.Popen([sys.executable, "-c", FLOOD, server.host, str(server.port), str(requests),
                                str(rounds)], stdout=subprocess.PIPE, text=True)
    flooded = []
    while flooder.poll() is None:
        flooded.append(retrieve())
    health = json.loads(flooder.communicate()[0])
    alone = [retrieve() for _ in range(max(10, len(flooded)))]
    ok = all(s == 200 for s, _ in flooded) and -1 not in health
    during, before = (percentiles([ms for _, ms in rows]) for rows in (flooded, alone))
    return {"attack": f"{requests * rounds} /health requests without the token", "health_answered":
            health.count(200), "health_statuses": {str(s): health.count(s) for s in sorted(set(health))},
            "retrieves": len(flooded), "retrieve_statuses": sorted({s for s, _ in flooded}),
            "retrieve_ms_flooded": during, "retrieve_ms_alone": before,
            "result": f"{len(flooded)} retrieves, all 200: {ok}; p50/p95 {during['p50']:.0f}/"
                      f"{during['p95']:.0f} ms flooded, {before['p50']:.0f}/{before['p95']:.0f} ms alone",
            "held": ok}


def _timed(call: Callable[[], int]) -> tuple[int, float]:
    start = time.perf_counter()
    status = call()
    return status, (time.perf_counter() - start) * 1000


def slow_connections(server: Served, count: int = SLOW_CONNECTIONS, seconds: float = SLOW_SECONDS) -> Row:
    """``count`` connections sending their headers a byte a second (each reconnects when the
    server closes it), while ``/health`` is asked every half second."""
    _raise_own_open_files(count + 64)
    log_before, stop = server.log_bytes(), threading.Event()
    attacker = threading.Thread(target=_slowloris, args=(server, count, stop))
    attacker.start()
    probes: list[int] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, http.client.HTTPException):
            probes.append(-1)
            probes[-1] = server.request("GET", "/health", token=False, timeout=10)[0]
        time.sleep(0.5)
    stop.set()
    attacker.join()
    logged = server.log_bytes() - log_before
    answered = probes.count(200)
    held = answered == len(probes) and logged < LOG_BYTES
    return {"attack": f"{count:,} connections sending headers slowly for {seconds:.0f} s",
            "health_probes": len(probes), "health_answered": answered, "log_bytes": logged,
            "open_files_limit": open_files_limit(server.pid),
            "result": f"/health {answered}/{len(probes)} answered, {logged:,} bytes logged", "held": held}


def _raise_own_open_files(wanted: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


def _slowloris(server: Served, count: int, stop: threading.Event) -> None:
    """Keep ``count`` connections open, each sending one byte of a header a second."""
    sockets = [s for s in (_slow_socket(server) for _ in range(count)) if s is not None]
    while not stop.is_set():
        for index, sock in enumerate(sockets):
            try:
                sock.send(b"X")
            except OSError:
                sock.close()
                sockets[index] = _slow_socket(server) or sock
        stop.wait(1.0)
    for sock in sockets:
        sock.close()


def _slow_socket(server: Served) -> socket.socket | None:
    try:
        sock = socket.create_connection((server.host, server.port), timeout=5)
        sock.send(f"GET /health HTTP/1.1\r\nHost: {server.host}\r\nX-Slow: ".encode())
        sock.setblocking(False)
        return sock
    except OSError:
        return None


def word_of_megabytes(server: Served) -> Row:
    """One 2 MB document without whitespace, then answers: a question about other documents
    (auto), one that retrieves the word's chunks (vector), and the same streamed."""
    word = long_word()
    status, body = server.upload("word.txt", word)
    added = json.loads(body).get("added", []) if status == 201 else []
    _, found = server.request("POST", "/v1/retrieve", {"question": word[:300].decode(), "method": "vector"})
    longest = max((len(c["text"]) for c in json.loads(found)["chunks"]), default=0)
    asks = [({"messages": [{"role": "user", "content": QUESTION}]}),
            ({"messages": [{"role": "user", "content": f"What does {word[:200].decode()} mean?"}],
              "method": "vector"}),
            ({"messages": [{"role": "user", "content": f"Spell {word[:100].decode()}."}],
              "method": "vector", "stream": True})]
    answers = [server.request("POST", "/v1/chat/completions", {**ask, "max_tokens": 16})[0] for ask in asks]
    for doc_id in added:
        server.request("DELETE", f"/v1/documents/{doc_id}")
    held = status == 201 and answers == [200, 200, 200] and 0 < longest <= 2048
    return {"attack": "one 2 MB document without whitespace", "upload_status": status,
            "longest_chunk_chars": longest, "answer_statuses": answers,
            "result": f"{status}; longest chunk {longest:,} chars; answers {answers}", "held": held}


def deleted_text(server: Served) -> Row:
    """A document deleted while serving: its phrase and rare words in no file of the index folder
    while the server runs, nor after ``kill -9`` right after the delete."""
    secret = "Zorblax Quintavian: the marmalade zeppelin hums ultraviolet at noon."
    needles = [b"marmalade zeppelin", b"Zorblax", b"Quintavian", b"ultraviolet"]
    status, body = server.request("POST", "/v1/documents", {"text": secret, "source": "secret.txt"})
    written = bool(index_files_holding(server.index, needles))
    doc_id = json.loads(body)["added"][0]
    deleted = server.request("DELETE", f"/v1/documents/{doc_id}")[0]
    alive = index_files_holding(server.index, needles)
    server.stop(signal.SIGKILL)
    killed = index_files_holding(server.index, needles)
    with EdgeRAG.open(server.index, create=False) as rag:
        gone = doc_id not in {d.id for d in rag.documents()}
    held = status == 201 and written and deleted == 200 and not alive and not killed and gone
    return {"attack": "delete a document on a plain index while serving, then kill -9",
            "written_before": written, "files_holding_while_serving": alive,
            "files_holding_after_kill": killed, "result": f"holding while serving {sorted(alive)}, "
            f"after kill -9 {sorted(killed)}", "held": held}


def derived_key(work: Path, index: Path, profile: Path | str) -> Row:
    """An index encrypted with a 32-character passphrase from a key file, served over HTTP; the
    file opens with the passphrase through SQLCipher's KDF and not as a raw 256-bit key."""
    from edge_rag.store.cipher import sqlcipher

    passphrase = "0123456789abcdefghijklmnopqrstuv"
    key_file = secret_file(work / "key32", passphrase)
    target = copy_index(index, work / "encrypted")
    EdgeRAG.change_key(target, None, passphrase)
    server = Served(target, profile, "--key-file", str(key_file), work=work)
    try:
        status = server.request("POST", "/v1/retrieve", {"question": QUESTION, "top_k": 1})[0]
    finally:
        server.stop()
    opens = {label: _opens(sqlcipher(), target, text) for label, text in
             (("raw", f"x'{passphrase.encode().hex()}'"), ("passphrase", passphrase))}
    return {"attack": "a key file holding a 32-character passphrase", "retrieve_status": status,
            "opens_as": opens, "result": f"served {status}; opens as raw key {opens['raw']}, "
            f"as passphrase {opens['passphrase']}", "held": status == 200 and opens == {
                "raw": False, "passphrase": True}}


def _opens(module: Any, index: Path, key: str) -> bool:
    conn = module.connect(str(index / "index.sqlite"))
    try:
        conn.execute("PRAGMA key = '" + key.replace("'", "''") + "'")
        conn.execute("SELECT count(*) FROM documents").fetchone()
        return True
    except module.DatabaseError:
        return False
    finally:
        conn.close()


def secret_file(path: Path, text: str, mode: int = 0o600) -> Path:
    """A key or token file with ``mode``."""
    path.write_text(text + "\n", encoding="utf-8")
    path.chmod(mode)
    return path


def loose_files(work: Path, index: Path, profile: Path | str) -> Row:
    """``serve`` given a key file and a token file of mode 0644, and a key of one character."""
    encrypted = work / "encrypted-loose"
    if not encrypted.is_dir():
        EdgeRAG.change_key(copy_index(index, encrypted), None, "a passphrase of some length")
    key = secret_file(work / "key-0644", "0123456789abcdefghijklmnopqrstuv", 0o644)
    token = secret_file(work / "token-0644", TOKEN, 0o644)
    short = secret_file(work / "key-short", "a")
    runs = {"key file 0644": ["--index", str(encrypted), "--key-file", str(key)],
            "token file 0644": ["--index", str(index), "--token-file", str(token)],
            "passphrase 'a'": ["--index", str(encrypted), "--key-file", str(short)]}
    outcomes = {label: _refused(args + ["--profile", str(profile)]) for label, args in runs.items()}
    said = {"key file 0644": "chmod 600", "token file 0644": "chmod 600", "passphrase 'a'": "shorter than 12"}
    held = all(code == 1 and said[label] in stderr for label, (code, stderr) in outcomes.items())
    return {"attack": "key and token files of mode 0644, passphrase 'a'",
            "outcomes": {k: {"exit": c, "stderr": e} for k, (c, e) in outcomes.items()},
            "result": "; ".join(f"{k}: exit {c}" for k, (c, _) in outcomes.items()), "held": held}


def _refused(args: list[str]) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "edge_rag.cli", "serve", "--port", "0", *args],
                          capture_output=True, text=True, env=env, timeout=300)
    return done.returncode, done.stderr.strip()


# -- the run ----------------------------------------------------------------------------------------

OPEN_ATTACKS = {"cross_origin": cross_origin, "rebinding": rebinding, "docx": docx_attack,
                "zip": zip_attack, "lying_zip": lying_zip_attack, "pdf": pdf_attack,
                "long_word": word_of_megabytes, "delete": deleted_text}
GUARDED_ATTACKS = ("timeout", "health_flood", "slow_connections")
KEY_ATTACKS = {"derived_key": derived_key, "loose_files": loose_files}
TIMEOUT = 6.0


def run(work: Path, profile: Path | str, only: list[str] | None = None) -> dict[str, Row]:
    """Every attack (or ``only`` those named) against servers over copies of the demo index."""
    wanted = lambda name: not only or name in only
    index = lihua_index(work)
    rows: dict[str, Row] = {}
    if any(wanted(n) for n in OPEN_ATTACKS):
        server = Served(copy_index(index, work / "open"), profile, work=work)
        try:
            rows |= {n: _say(n, attack, server) for n, attack in OPEN_ATTACKS.items() if wanted(n)}
        finally:
            server.stop(signal.SIGKILL)
    if any(wanted(n) for n in GUARDED_ATTACKS):
        rows |= guarded(work, index, profile, wanted)
    rows |= {n: _say(n, attack, work, index, profile) for n, attack in KEY_ATTACKS.items() if wanted(n)}
    return rows


def guarded(work: Path, index: Path, profile: Path | str, wanted: Callable[[str], bool]) -> dict[str, Row]:
    """The attacks on a server with a token and a short time limit, started with a board's soft
    limit of 1,024 open files."""
    server = Served(copy_index(index, work / "guarded"), profile, "--timeout", str(TIMEOUT), token=TOKEN,
                    open_files=1024, work=work)
    try:
        attacks = {"timeout": lambda s: timed_out_upload(s, TIMEOUT), "health_flood": health_flood,
                   "slow_connections": slow_connections}
        return {n: _say(n, attack, server) for n, attack in attacks.items() if wanted(n)}
    finally:
        server.stop()


def _say(name: str, attack: Callable[..., Row], *args: Any) -> Row:
    print(f"[hostile] {name}", file=sys.stderr, flush=True)
    row = attack(*args)
    print(f"[hostile] {name}: {'held' if row['held'] else 'FAILED'}: {row['result']}", file=sys.stderr,
          flush=True)
    return row


def table(rows: dict[str, Row]) -> str:
    """The Markdown table: attack, what came back, whether it held."""
    return markdown_table(["attack", "observed", "held"],
                          [[r["attack"], r["result"].replace("|", "/"), "yes" if r["held"] else "**no**"]
                           for r in rows.values()])


def main(argv: list[str] | None = None) -> int:
    """Run the attacks, print the table, write the results."""
    args = _parser().parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="edge-rag-hostile-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        rows = run(work, args.profile, args.only)
    text = table(rows)
    print(text)
    (RESULTS / "hostile_server.md").write_text(text + "\n", encoding="utf-8")
    held = all(r["held"] for r in rows.values())
    result = {"profile": str(args.profile), "rows": rows, "held": held}
    print(f"wrote {write_result('hostile_server', result)}")
    return 0 if held else 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     parents=[options(profile="dev")])
    names = [*OPEN_ATTACKS, *GUARDED_ATTACKS, *KEY_ATTACKS]
    parser.add_argument("--only", nargs="+", choices=names, metavar="NAME",
                        help=f"run only these attacks ({', '.join(names)})")
    parser.add_argument("--work", type=Path, default=None, help="folder for the index copies (default: a "
                        "temporary one)")
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
