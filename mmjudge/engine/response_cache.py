"""SQLite response cache: an answer paid for once is never paid for again.

Keys hash the canonical request (provider, model, endpoint, rendered prompt, image hashes,
generation parameters) and leave out anything that cannot change the answer (timeouts,
retries). The database runs in WAL mode so a reader never blocks the writer and a run killed
mid-write leaves a consistent file; several processes may share one file.

Beside the answers the file keeps **claims** (:class:`ItemClaims`): before a process pays for
a call it claims the request's key, with its owner (host, pid, process start time) and an
expiry that the owner keeps pushing forward while it lives. Another process that meets a
live claim waits for the answer instead of paying for it again; a claim whose owner died
(SIGKILL included) is taken over once it expires, or at once when the owner ran on this host
and its process is gone. A claim marked *in flight* whose owner died records a request that
was sent and never answered: the provider billed it, and the process that sends it again
counts it as resent (a claim keeps the count of such lost sends of its request).

A claim is marked *maybe sent* (:data:`MAYBE_SENT`) before its request goes out, and *sent*
(:data:`SENT`) once the transport says it has left (:mod:`mmjudge.departures`); a
process killed between the two leaves a request the provider may or may not have seen, which
the next sender counts apart, as maybe resent.

A claim also names the run folder of its owner's run, what one send of its request is expected
to cost, and how many of its lost sends that folder's ledger of possibly billed sends
(:mod:`mmjudge.store.unanswered`) counts already (*noted*). The next run in the folder counts
the sends a killed run left in flight there before it sends anything
(:meth:`ItemClaims.left_behind`): until an answer proves otherwise they may have been billed,
and its budget counts them.

A file that cannot be used is refused when it is opened (:func:`checked_connection`), in one
line saying what is wrong and what to do, before any call: a folder at the path, a folder that
cannot be made, a file that is not SQLite (random bytes, a bad header), a damaged one
(truncated, flipped bits: SQLite's quick check), or a SQLite file whose tables are not the
cache's. The remedy is to move the file aside: the run starts a new cache, pays again only for
the answers it needs, and keeps every judgment already in its run folder. A file that cannot
be written (read-only, immutable, in a read-only folder) is refused when its claims are first
taken (:meth:`ResponseCache.claims`), before any call: a run that could not record the answers
it pays for, nor claim them, would pay for them again. A single stored answer that cannot be
read (not JSON, no text) is no reason to stop: it counts as not cached, is asked again and
replaced, with one warning per file.

Several processes may open and write one file at once: each step waits up to
:data:`~mmjudge.engine.cache_file.LOCK_WAIT_S` for another connection's lock, and a lock held
longer is a :class:`~mmjudge.errors.CacheError` saying the file is *busy* and who holds it,
never that it is damaged. Any error SQLite gives while the cache is in use is such a one-line
error (:func:`~mmjudge.engine.cache_file.reported`), never a traceback.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from mmjudge.config import ModelConfig
from mmjudge.engine.cache_file import checked_connection, probe_writable, reported
from mmjudge.judges.registry import endpoint_override
from mmjudge.records import (
    JudgeRequest,
    JudgeResponse,
    Usage,
    canonical_json,
    json_string,
    sha256_text,
)


def request_key(model: ModelConfig, request: JudgeRequest) -> str:
    """Content hash of everything that determines the answer (see :class:`RequestKeys`)."""
    return RequestKeys(model)(request)


class RequestKeys:
    """The cache keys of one model's requests.

    A key is the sha256 of ``canonical_json`` of a dict: ``provider``, ``model``, ``base_url``,
    ``system``, ``prompt``, ``images`` (``[sha256, width, height]`` each), ``image_detail``
    (null without images), ``temperature``, ``max_tokens``, ``options`` and ``grades``, and
    for a repeat of the request (``runner.samples``) its ``sample`` number: the first answer
    (sample 0) has no such key, so it shares the key a run without samples gives it; likewise
    ``image_places`` only for a request that places its images in the prompt text. The
    model's parts are encoded once here; each request's key is written out part by part in
    the same order and form (sorted keys, no spaces), so it is the same text, and the same
    key, as encoding the whole dict each time.
    """

    def __init__(self, model: ModelConfig) -> None:
        self._image_detail = canonical_json(model.image_detail)
        self._head = '{"base_url":' + canonical_json(endpoint_override(model)) + ',"grades":'
        self._middle = (
            f',"max_tokens":{canonical_json(model.max_tokens)}'
            f',"model":{canonical_json(model.model_id)}'
            f',"options":{canonical_json(dict(model.options))},"prompt":'
        )
        self._provider = f',"provider":{canonical_json(model.provider)}'
        self._end = f',"temperature":{canonical_json(model.temperature)}}}'
        self._grades: dict[tuple[int, ...], str] = {}

    def __call__(self, request: JudgeRequest) -> str:
        grades = self._grades.get(request.grades)
        if grades is None:
            grades = self._grades[request.grades] = canonical_json(list(request.grades))
        images = request.images
        if images:
            shown = canonical_json([[image.sha256, image.width, image.height] for image in images])
            detail = self._image_detail
        else:
            shown, detail = "[]", "null"
        system = request.system
        text = "".join(
            (
                self._head,
                grades,
                ',"image_detail":',
                detail,
                _places(request.image_places),
                ',"images":',
                shown,
                self._middle,
                request.prompt_json,
                self._provider,
                f',"sample":{request.sample},"system":' if request.sample else ',"system":',
                "null" if system is None else json_string(system),
                self._end,
            )
        )
        return sha256_text(text)


def _places(places: tuple[int, ...]) -> str:
    """The key's ``image_places`` entry: where a request puts its images in the prompt text,
    when it says (nothing otherwise, so such a request keeps the key it had before)."""
    return f',"image_places":{canonical_json(list(places))}' if places else ""


#: A claim's ``in_flight`` value: its request is about to go out, or may have gone out without
#: the transport having said so yet.
MAYBE_SENT = 1
#: A claim's ``in_flight`` value: its request has left (the transport said so).
SENT = 2


def _in_flight(argument: bool | int) -> int:
    """The ``in_flight`` value for a ``sending`` argument: True means :data:`SENT`."""
    if argument is True:
        return SENT
    return int(argument)


#: Keys looked up in one query by :meth:`ResponseCache.get_many` (under SQLite's oldest limit
#: of 999 bound values per statement).
KEYS_PER_QUERY = 500


_log = logging.getLogger(__name__)


class ResponseCache:
    """Maps request keys to provider responses."""

    def __init__(self, path: Path, lock_wait_s: float | None = None) -> None:
        """``lock_wait_s``: how long each step waits for another connection's lock before
        the cache is reported busy (:data:`~mmjudge.engine.cache_file.LOCK_WAIT_S` by
        default)."""
        self.path = path
        self.lock_wait_s = lock_wait_s
        self._db = checked_connection(path, lock_wait_s)
        self._damaged_seen = False

    @reported
    def get(self, key: str) -> JudgeResponse | None:
        row = self._db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else self._readable(row[0])

    def _readable(self, payload: str) -> JudgeResponse | None:
        """The stored answer, or None (asked again) when it cannot be read."""
        try:
            return _response(payload)
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            if not self._damaged_seen:
                self._damaged_seen = True
                _log.warning(
                    "mmjudge: the response cache %s holds an answer that cannot be read "
                    "(%s: %s); such answers are asked again and replaced",
                    self.path,
                    type(error).__name__,
                    error,
                )
            return None

    @reported
    def get_many(self, keys: Sequence[str]) -> dict[str, JudgeResponse]:
        """The answers in the cache for any of ``keys``, by key (one query per
        :data:`KEYS_PER_QUERY` keys, where :meth:`get` costs one per key)."""
        found: dict[str, JudgeResponse] = {}
        for start in range(0, len(keys), KEYS_PER_QUERY):
            chunk = list(keys[start : start + KEYS_PER_QUERY])
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, response FROM responses WHERE key IN ({marks})", chunk
            )
            for key, payload in rows:
                response = self._readable(payload)
                if response is not None:
                    found[key] = response
        return found

    @reported
    def put(self, key: str, response: JudgeResponse) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO responses (key, response, created) VALUES (?, ?, ?)",
            (key, _payload(response), time.time()),
        )

    def claims(
        self, ttl_s: float, owner: Owner | None = None, folder: Path | None = None
    ) -> ItemClaims:
        """Claims on request keys in this file, held by ``owner`` (this process by default)
        for a run in ``folder`` (none named by default)."""
        return ItemClaims(self, owner or Owner.this_process(), ttl_s, folder)

    @reported
    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self._db.close()


def _response(payload: str) -> JudgeResponse:
    data: dict[str, Any] = json.loads(payload)
    text = data["text"]
    if not isinstance(text, str):
        raise TypeError(f"its text is {type(text).__name__}, not a string")
    return JudgeResponse(
        text=text,
        usage=Usage.from_dict(data.get("usage")),
        raw_usage=data.get("raw_usage") or {},
        latency_s=float(data.get("latency_s", 0.0)),
        model=data.get("model", ""),
        stop_reason=data.get("stop_reason"),
        batch=bool(data.get("batch", False)),
        system_fingerprint=data.get("system_fingerprint"),
    )


def _payload(response: JudgeResponse) -> str:
    return json.dumps(
        {
            "text": response.text,
            "usage": response.usage.to_dict(),
            "raw_usage": response.raw_usage,
            "latency_s": response.latency_s,
            "model": response.model,
            "stop_reason": response.stop_reason,
            "batch": response.batch,
            "system_fingerprint": response.system_fingerprint,
        }
    )


# --- claims ---------------------------------------------------------------------------------


def _process_start(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux), or "" when unknown.

    With the pid it names one process for good: a pid reused by a later process has
    another start time.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return ""
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else ""


def _process_state(pid: int) -> str | None:
    """The process's state letter from /proc (``Z`` for a zombie), "" when there is no such
    process, None on a system without /proc."""
    if not Path("/proc/self/stat").exists():
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return ""
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[0] if fields else ""


@dataclass(frozen=True)
class Owner:
    """Who holds a claim: a process on a host."""

    host: str
    pid: int
    started: str
    """The process's start time (see :func:`_process_start`); "" where it cannot be read."""

    @classmethod
    def this_process(cls) -> Owner:
        pid = os.getpid()
        return cls(socket.gethostname(), pid, _process_start(pid))

    def is_gone(self) -> bool:
        """True only when this owner ran on this host and its process has ended.

        A zombie (killed, not yet reaped) counts as ended; so does a pid now used by a
        process with another start time. Owners on other hosts are never known to be gone;
        their claims end when they expire.
        """
        if self.host != socket.gethostname():
            return False
        state = _process_state(self.pid)
        if state in ("", "Z"):
            return True
        if state is None:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                return False
            return False
        return bool(self.started) and _process_start(self.pid) not in ("", self.started)


class ClaimRow(NamedTuple):
    """A key's claim as the claims table holds it (its key aside)."""

    owner: Owner
    """Who holds it."""
    expires: float
    """When it lapses unless renewed (epoch seconds; 0: given up)."""
    in_flight: int
    """Whether its request is on the wire: 0, :data:`MAYBE_SENT` or :data:`SENT`."""
    lost: int
    """Sends of this key made before and lost (counted as resent)."""
    maybe_lost: int
    """Sends of this key that may have left before they were lost."""
    folder: str
    """The run folder of the owner's run ("" when not named)."""
    usd: float
    """What one send of its request is expected to cost (0 when not known)."""
    noted: int
    """Of its lost sends (``lost``, ``maybe_lost`` and one in flight), how many the ledger of
    ``folder`` counts already."""

    @property
    def unanswered(self) -> int:
        """Its sends that may have been billed without an answer, once its owner is gone."""
        return self.lost + self.maybe_lost + (1 if self.in_flight else 0)


#: Columns of the claims table added since it was first released, with their declarations.
_ADDED_COLUMNS = {
    "maybe_lost": "INTEGER NOT NULL DEFAULT 0",
    "folder": "TEXT NOT NULL DEFAULT ''",
    "usd": "REAL NOT NULL DEFAULT 0",
    "noted": "INTEGER NOT NULL DEFAULT 0",
}

#: The columns :func:`_claim_row` reads, in its order.
_CLAIM_COLUMNS = "host, pid, started, expires, in_flight, lost, maybe_lost, folder, usd, noted"


#: Every column of the claims table, in the order the claim inserts write them.
_ALL_COLUMNS = (
    "key, host, pid, started, claimed, expires, in_flight, lost, maybe_lost, folder, usd, noted"
)


def _claim_row(row: Sequence[Any]) -> ClaimRow:
    """A claims-table row selected as :data:`_CLAIM_COLUMNS`."""
    host, pid, started, expires, in_flight, lost, maybe_lost, folder, usd, noted = row
    return ClaimRow(
        owner=Owner(str(host), int(pid), str(started)),
        expires=float(expires),
        in_flight=int(in_flight),
        lost=int(lost),
        maybe_lost=int(maybe_lost),
        folder=str(folder),
        usd=float(usd),
        noted=int(noted),
    )


class LeftBehind(NamedTuple):
    """A claim a run in the same folder left with sends no ledger counts yet."""

    key: str
    """The request's key."""
    sends: int
    """Its sends that may have been billed and are not counted yet."""
    usd: float
    """What one of them is expected to cost (0 when not known)."""


@dataclass
class Claim:
    """What :meth:`ItemClaims.claim` found."""

    state: str
    """``claimed`` (ours now), ``cached`` (answered already) or ``busy`` (a live process
    holds it)."""
    response: JudgeResponse | None = None
    """The answer, when ``cached``."""
    resent: int = 0
    """When ``claimed``: how many earlier sends of this request were lost (an owner sent it
    and stopped before its answer arrived); calling again sends it once more."""
    maybe_resent: int = 0
    """When ``claimed``: earlier sends that an owner stopped between marking and sending, or
    before it could record that the request had left: the provider may have seen them."""
    holder: str = ""
    """When ``busy``: who holds it (``host:pid``)."""
    noted: int = 0
    """When ``claimed``: of the lost sends (``resent`` and ``maybe_resent``), how many this
    run's folder's ledger counts already."""
    usd: float = 0.0
    """When ``claimed`` with lost sends: what one send was expected to cost when they were
    counted (0 when not known)."""


class ItemClaims:
    """Claims on request keys, stored beside the answers in the response cache's file.

    Each write is committed before its method returns, which is what the runner relies on: a
    claim is on file before its request is sent (so another process never pays for it too),
    and an answer is on file before its row is written.
    """

    def __init__(
        self, cache: ResponseCache, owner: Owner, ttl_s: float, folder: Path | None = None
    ) -> None:
        self.cache = cache
        self.owner = owner
        self.ttl_s = float(ttl_s)
        self.folder = str(folder.resolve()) if folder is not None else ""
        self.path = cache.path
        self.lock_wait_s = cache.lock_wait_s
        self._db = cache._db
        self._mine = (owner.host, owner.pid, owner.started)
        self._prepare()

    @reported
    def _prepare(self) -> None:
        """Make the claims table (or add the column a file from an older release lacks) in
        one transaction, so that several processes opening one file at once each find the
        table whole; then find a file that cannot be written, so that no run starts that
        could not record what it pays for."""
        with self._transaction():
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS claims ("
                " key TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL,"
                " started TEXT NOT NULL, claimed REAL NOT NULL, expires REAL NOT NULL,"
                " in_flight INTEGER NOT NULL DEFAULT 0, lost INTEGER NOT NULL DEFAULT 0,"
                " maybe_lost INTEGER NOT NULL DEFAULT 0, folder TEXT NOT NULL DEFAULT '',"
                " usd REAL NOT NULL DEFAULT 0, noted INTEGER NOT NULL DEFAULT 0)"
            )
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(claims)")}
            # Columns a file from an older release lacks: added with their defaults.
            for column, kind in _ADDED_COLUMNS.items():
                if column not in columns:
                    self._db.execute(f"ALTER TABLE claims ADD COLUMN {column} {kind}")
        probe_writable(self._db)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction, the write lock taken at its start (waited for up to the
        cache's lock wait), rolled back when its body fails."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self._db.in_transaction:  # SQLite rolls back by itself after some errors
                self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _row(self, key: str) -> ClaimRow | None:
        row = self._db.execute(
            f"SELECT {_CLAIM_COLUMNS} FROM claims WHERE key = ?", (key,)
        ).fetchone()
        return None if row is None else _claim_row(row)

    def _live_elsewhere(self, row: ClaimRow | None) -> bool:
        if row is None or row.owner == self.owner:
            return False
        if row.expires <= time.time():
            return False
        return not row.owner.is_gone()

    def _take(self, key: str, in_flight: int, usd: float) -> Claim:
        """Claim ``key`` unless it is answered already or a live process holds it."""
        response = self.cache.get(key)
        if response is not None:
            return Claim("cached", response)
        now = time.time()
        # Nearly every claim is of a key nobody holds: one insert takes it. A key that has a
        # claim on file (held, expired or lost) is looked at below.
        taken = self._db.execute(
            f"INSERT OR IGNORE INTO claims ({_ALL_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?, 0)",
            (key, *self._mine, now, now + self.ttl_s, in_flight, self.folder, usd),
        )
        if taken.rowcount == 1:
            return Claim("claimed")
        row = self._row(key)
        if self._live_elsewhere(row):
            assert row is not None
            return Claim("busy", holder=f"{row.owner.host}:{row.owner.pid}")
        lost = maybe_lost = noted = 0
        known_usd = 0.0
        if row is not None:
            theirs = row.owner != self.owner
            lost = row.lost + (1 if theirs and row.in_flight == SENT else 0)
            maybe_lost = row.maybe_lost + (1 if theirs and row.in_flight == MAYBE_SENT else 0)
            if row.folder == self.folder:  # another folder's ledger is not this run's
                noted = min(row.noted, lost + maybe_lost)
            known_usd = row.usd
        self._db.execute(
            f"INSERT OR REPLACE INTO claims ({_ALL_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                *self._mine,
                now,
                now + self.ttl_s,
                in_flight,
                lost,
                maybe_lost,
                self.folder,
                known_usd if noted else usd,
                noted,
            ),
        )
        return Claim("claimed", resent=lost, maybe_resent=maybe_lost, noted=noted, usd=known_usd)

    @reported
    def claim(self, key: str, *, sending: bool | int = False, usd: float = 0.0) -> Claim:
        """Claim ``key`` unless it is answered already or a live process holds it; with
        ``sending``, the claim records its request as on the wire from the start (True or
        :data:`SENT`; :data:`MAYBE_SENT`: about to go out). ``usd``: what one send of it is
        expected to cost."""
        with self._transaction():
            return self._take(key, _in_flight(sending), usd)

    @reported
    def sending(self, key: str, in_flight: bool | int = True) -> None:
        """Mark our claim as having a request on the wire (True or :data:`SENT`), maybe on
        it (:data:`MAYBE_SENT`), or not any more (False)."""
        self._db.execute(
            "UPDATE claims SET in_flight = ?, expires = ? "
            "WHERE key = ? AND host = ? AND pid = ? AND started = ?",
            (_in_flight(in_flight), time.time() + self.ttl_s, key, *self._mine),
        )

    @reported
    def complete(self, key: str, response: JudgeResponse) -> None:
        """Store the answer and drop the claim, in one transaction."""
        with self._transaction():
            self.cache.put(key, response)
            self._db.execute("DELETE FROM claims WHERE key = ?", (key,))

    @reported
    def release(self, key: str) -> None:
        """Drop our claim without an answer (the call failed, or was never sent)."""
        self._db.execute(
            "DELETE FROM claims WHERE key = ? AND host = ? AND pid = ? AND started = ?",
            (key, *self._mine),
        )

    @reported
    def abandon(self, key: str) -> None:
        """Give up a claim whose request is on the wire (the run is stopping): it expires
        now and stays marked in flight, so whoever sends it again counts it as resent."""
        self.abandon_all([(key, 0.0)], noted=False)

    @reported
    def abandon_all(self, given_up: Sequence[tuple[str, float]], *, noted: bool = True) -> None:
        """:meth:`abandon` for each ``(key, usd)`` of ``given_up``, in one transaction; with
        ``noted``, their folder's ledger counts the sends given up already, each at ``usd``."""
        with self._transaction():
            self._db.executemany(
                f"UPDATE claims SET expires = 0, in_flight = MAX(in_flight, {SENT}), "
                "noted = noted + ?, usd = CASE WHEN ? THEN ? ELSE usd END "
                "WHERE key = ? AND host = ? AND pid = ? AND started = ?",
                [(int(noted), int(noted), usd, key, *self._mine) for key, usd in given_up],
            )

    @reported
    def left_behind(self) -> list[LeftBehind]:
        """Claims of this run's folder, held by no live process, whose sends that may have
        been billed (lost, and in flight when their owner died) the folder's ledger does not
        count yet: what a killed run left in flight, for the next run to count before it
        sends anything (then :meth:`noted`)."""
        if not self.folder:
            return []
        rows = self._db.execute(
            f"SELECT key, {_CLAIM_COLUMNS} FROM claims WHERE folder = ?", (self.folder,)
        ).fetchall()
        found: list[LeftBehind] = []
        for key, *rest in rows:
            claim = _claim_row(rest)
            if claim.owner == self.owner or self._live_elsewhere(claim):
                continue
            if claim.unanswered > claim.noted:
                found.append(LeftBehind(str(key), claim.unanswered - claim.noted, claim.usd))
        return found

    @reported
    def noted(self, counted: Sequence[tuple[str, float]]) -> None:
        """Record that this run's folder's ledger now counts every lost send of each key in
        ``counted`` (with what one send was counted at), in one transaction."""
        if not counted:
            return
        with self._transaction():
            self._db.executemany(
                "UPDATE claims SET noted = lost + maybe_lost + (in_flight > 0), usd = ? "
                "WHERE key = ? AND folder = ?",
                [(usd, key, self.folder) for key, usd in counted],
            )

    @reported
    def renew(self) -> None:
        """Push the expiry of every claim we hold forward (the owner's heartbeat)."""
        self._db.execute(
            "UPDATE claims SET expires = ? WHERE host = ? AND pid = ? AND started = ? "
            "AND expires > 0",
            (time.time() + self.ttl_s, *self._mine),
        )

    @reported
    def release_all(self) -> None:
        """At the end of a run: drop our claims with nothing in flight, expire the others."""
        with self._transaction():
            self._db.execute(
                "DELETE FROM claims WHERE host = ? AND pid = ? AND started = ? AND in_flight = 0",
                self._mine,
            )
            self._db.execute(
                "UPDATE claims SET expires = 0 WHERE host = ? AND pid = ? AND started = ?",
                self._mine,
            )

    @reported
    def held(self) -> int:
        """Claims held by live owners other than us (for tests and the chaos script)."""
        rows = self._db.execute(f"SELECT {_CLAIM_COLUMNS} FROM claims")
        return sum(self._live_elsewhere(_claim_row(r)) for r in rows)
