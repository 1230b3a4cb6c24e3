"""Where traces and their derived layouts and pictures are kept for every worker and host: one store, by URL.

Workers of one server share no memory (gunicorn forks them; several hosts share nothing at all), so what one
worker registers or lays out goes to a store they all read:

- ``memory`` (the default, no setting): this process only, as a single ``serve`` runs;
- ``file:///path``: a folder, for several workers on one host (``serve --workers N`` uses a temporary one);
- ``redis://host:port/db``: a Redis server, for several hosts (the ``redis`` client package; install
  ``torchvista_dash[redis]``).

The one setting is ``$TVD_STORE``, ``serve --store URL`` or ``torchvista_dash.configure(store=URL)``. A store
holds bytes under string keys, each either kept (the traces a server was started with) or dropped after
``idle_s`` without a use; the folder store also holds at most ``max_bytes``, and Redis does with its own
``maxmemory`` (policy ``volatile-lru`` spares what is kept). What is read back is untrusted (sharing.py
validates it). A lock in the store, with a time limit its holder renews, lets one worker of many compute a
thing; a dead worker's lock lapses within the limit.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from torchvista_dash.cache import Cache
from torchvista_dash.model.errors import TorchvistaDashError

STORE_ENV = "TVD_STORE"
IDLE_S = 24 * 3600.0  # an entry unused this long goes (kept ones never do)
MAX_BYTES = 2 * 2**30  # what a folder store holds at most (Redis: its own maxmemory)
MAX_ENTRY_BYTES = 256 * 2**20  # one entry read back larger than this is refused unread
LOCK_S = 6.0  # a lock lapses this long after its holder last renewed it
REDIS_TIMEOUT_S = 2.0  # a Redis that does not answer within this is down: the page says so


class StoreError(TorchvistaDashError, ValueError):
    """A store URL that cannot be used (unknown scheme, unreachable server, missing client package)."""


class StoreUnavailable(TorchvistaDashError, ConnectionError):
    """The shared store did not answer (a Redis server stopped, a folder gone)."""


class Store:
    """Bytes under string keys; the interface every kind of store gives."""

    url = "memory"
    shared = False  # whether other processes read it (only then is anything published)

    def get(self, key: str) -> bytes | None:
        """The value, or None; a use: it refreshes the entry's idle time."""
        raise NotImplementedError

    def put(self, key: str, value: bytes, *, keep: bool = False) -> None:
        raise NotImplementedError

    def touch(self, key: str) -> bool:
        """Refresh the entry's idle time; False if the store does not hold it (dropped, or lost)."""
        raise NotImplementedError

    def delete(self, key: str) -> None:
        raise NotImplementedError

    def incr(self, key: str) -> int:
        """Add one to a counter (kept), and return it: how many times something was done, across workers."""
        raise NotImplementedError

    def acquire(self, key: str, token: str, ttl_s: float) -> bool:
        """Take the lock ``key`` for ``token`` unless another holds it; it lapses after ``ttl_s``."""
        raise NotImplementedError

    def renew(self, key: str, token: str, ttl_s: float) -> bool:
        raise NotImplementedError

    def release(self, key: str, token: str) -> None:
        raise NotImplementedError

    def ping(self) -> None:
        """Raise StoreUnavailable if the store cannot be reached."""

    def close(self) -> None:
        pass

    @contextlib.contextmanager
    def lock(self, key: str, *, wait_s: float, ttl_s: float = LOCK_S) -> Iterator[bool]:
        """Hold the lock ``key`` while the block runs (renewed meanwhile), waiting for it at most ``wait_s``;
        yields whether it was got (the block runs either way: a lock no one frees blocks no one for long)."""
        token = os.urandom(12).hex()
        deadline = time.monotonic() + wait_s
        got = self.acquire(key, token, ttl_s)
        while not got and time.monotonic() < deadline:
            time.sleep(0.05)
            got = self.acquire(key, token, ttl_s)
        stop = threading.Event()
        if got:

            def keep_renewing() -> None:
                while not stop.wait(ttl_s / 3):
                    with contextlib.suppress(Exception):
                        self.renew(key, token, ttl_s)

            threading.Thread(target=keep_renewing, name="tvd-store-lock", daemon=True).start()
        try:
            yield got
        finally:
            stop.set()
            if got:
                with contextlib.suppress(Exception):
                    self.release(key, token)


class MemoryStore(Store):
    """This process only: a byte-bounded cache (the registry already holds what this process uses)."""

    def __init__(self, max_bytes: int = 256 * 2**20) -> None:
        self._data: Cache[str, bytes] = Cache(1 << 20, max_bytes=max_bytes, weigh=len)
        self._kept: dict[str, bytes] = {}
        self._locks: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        return self._kept.get(key) or self._data.peek(key)

    def put(self, key: str, value: bytes, *, keep: bool = False) -> None:
        if keep:
            self._kept[key] = value
        else:
            self._data.put(key, value)

    def touch(self, key: str) -> bool:
        return self.get(key) is not None

    def delete(self, key: str) -> None:
        self._kept.pop(key, None)
        self._data.pop(key)

    def incr(self, key: str) -> int:
        with self._lock:
            n = int(self._kept.get(key, b"0")) + 1
            self._kept[key] = str(n).encode()
            return n

    def acquire(self, key: str, token: str, ttl_s: float) -> bool:
        now = time.monotonic()
        with self._lock:
            held = self._locks.get(key)
            if held is not None and held[1] > now and held[0] != token:
                return False
            self._locks[key] = (token, now + ttl_s)
            return True

    def renew(self, key: str, token: str, ttl_s: float) -> bool:
        return self.acquire(key, token, ttl_s)

    def release(self, key: str, token: str) -> None:
        with self._lock:
            if self._locks.get(key, ("", 0.0))[0] == token:
                del self._locks[key]


class FolderStore(Store):
    """One file per entry in a folder (written whole, then renamed into place: a reader never sees half a
    file); kept entries in ``kept/``; locks are files made exclusively, lapsed by their time."""

    shared = True

    def __init__(self, path: str | Path, *, idle_s: float = IDLE_S, max_bytes: int = MAX_BYTES) -> None:
        self.root = Path(path)
        self.url = f"file://{self.root}"
        self.idle_s, self.max_bytes = idle_s, max_bytes
        for sub in ("data", "kept", "locks"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self._written = 0  # bytes written since the last sweep

    def _file(self, key: str, kept: bool = False) -> Path:
        name = hashlib.sha256(key.encode("utf-8")).hexdigest()  # any key is a safe file name
        return self.root / ("kept" if kept else "data") / name

    def get(self, key: str) -> bytes | None:
        for kept in (True, False):
            path = self._file(key, kept)
            try:
                if path.stat().st_size > MAX_ENTRY_BYTES:
                    raise StoreUnavailable(
                        f"the store entry for {key[:60]!r} is over {MAX_ENTRY_BYTES:,} bytes"
                    )
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise StoreUnavailable(f"the trace store at {self.url} cannot be read: {exc}") from None
            if not kept:
                with contextlib.suppress(OSError):
                    os.utime(path)  # a use: its idle time starts again
            return data
        return None

    def put(self, key: str, value: bytes, *, keep: bool = False) -> None:
        path = self._file(key, keep)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            tmp.write_bytes(value)
            os.replace(tmp, path)
        except OSError as exc:
            raise StoreUnavailable(f"the trace store at {self.url} cannot be written: {exc}") from None
        self._written += len(value)
        if self._written > self.max_bytes // 16:
            self.sweep()

    def sweep(self, now: float | None = None) -> None:
        """Drop entries idle past ``idle_s``, then the least recently used past ``max_bytes`` (kept ones
        never)."""
        self._written = 0
        now = time.time() if now is None else now
        files = []
        for path in (self.root / "data").iterdir():
            try:
                st = path.stat()
            except OSError:
                continue
            if now - st.st_mtime > self.idle_s:
                path.unlink(missing_ok=True)
            else:
                files.append((st.st_mtime, st.st_size, path))
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= self.max_bytes:
                break
            path.unlink(missing_ok=True)
            total -= size

    def touch(self, key: str) -> bool:
        for kept in (True, False):
            try:
                os.utime(self._file(key, kept))
                return True
            except OSError:
                continue
        return False

    def delete(self, key: str) -> None:
        for kept in (True, False):
            self._file(key, kept).unlink(missing_ok=True)

    def incr(self, key: str) -> int:
        with self.lock("count:" + key, wait_s=5.0) as _:
            path = self._file(key, kept=True)
            try:
                n = int(path.read_bytes() or b"0") + 1
            except (FileNotFoundError, ValueError):
                n = 1
            self.put(key, str(n).encode(), keep=True)
            return n

    def _lock_file(self, key: str) -> Path:
        return self.root / "locks" / hashlib.sha256(key.encode("utf-8")).hexdigest()

    def acquire(self, key: str, token: str, ttl_s: float) -> bool:
        path = self._lock_file(key)
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            try:
                if time.time() - path.stat().st_mtime <= ttl_s:
                    return False
                path.unlink(missing_ok=True)  # lapsed: its holder died or hung
            except FileNotFoundError:
                pass
            return self.acquire(key, token, ttl_s) if not path.exists() else False
        with os.fdopen(fd, "w") as f:
            f.write(token)
        return True

    def renew(self, key: str, token: str, ttl_s: float) -> bool:
        path = self._lock_file(key)
        try:
            if path.read_text() != token:
                return False
            os.utime(path)
            return True
        except OSError:
            return False

    def release(self, key: str, token: str) -> None:
        path = self._lock_file(key)
        with contextlib.suppress(OSError):
            if path.read_text() == token:
                path.unlink()

    def ping(self) -> None:
        if not (self.root / "data").is_dir():
            raise StoreUnavailable(f"the trace store folder {self.root} is gone")


class RedisStore(Store):
    """A Redis server (the ``redis`` client package): entries expire ``idle_s`` after their last use, kept
    ones never; locks are ``SET NX PX`` keys freed only by their holder."""

    shared = True

    def __init__(self, url: str, *, idle_s: float = IDLE_S) -> None:
        try:
            import redis
        except ImportError:
            raise StoreError(
                f"the trace store {url} needs the redis client package: pip install 'torchvista_dash[redis]'"
            ) from None
        self.url, self.idle_s = url, idle_s
        self._redis = redis
        self._client = redis.Redis.from_url(
            url, socket_timeout=REDIS_TIMEOUT_S, socket_connect_timeout=REDIS_TIMEOUT_S
        )
        self._prefix = "tvd:"

    @contextlib.contextmanager
    def _answer(self) -> Iterator[None]:
        try:
            yield
        except self._redis.RedisError as exc:
            raise StoreUnavailable(f"the trace store at {self.url} does not answer ({exc})") from None

    def get(self, key: str) -> bytes | None:
        with self._answer():
            k = self._prefix + key
            pipe: Any = self._client.pipeline()  # one round trip
            pipe.strlen(k)
            pipe.ttl(k)
            size, ttl = pipe.execute()
            if size > MAX_ENTRY_BYTES:
                raise StoreUnavailable(f"the store entry {key[:60]!r} is over {MAX_ENTRY_BYTES:,} bytes")
            if ttl == -2:
                return None
            pipe = self._client.pipeline()
            pipe.get(k)
            if ttl >= 0:
                pipe.expire(k, int(self.idle_s))  # a use: its idle time starts again
            value: bytes | None = pipe.execute()[0]
            return value

    def put(self, key: str, value: bytes, *, keep: bool = False) -> None:
        with self._answer():
            self._client.set(self._prefix + key, value, ex=None if keep else int(self.idle_s))

    def touch(self, key: str) -> bool:
        with self._answer():
            k = self._prefix + key
            ttl = self._client.ttl(k)
            if ttl == -2:
                return False
            if ttl >= 0:
                self._client.expire(k, int(self.idle_s))
            return True

    def delete(self, key: str) -> None:
        with self._answer():
            self._client.delete(self._prefix + key)

    def incr(self, key: str) -> int:
        with self._answer():
            return int(self._client.incr(self._prefix + key))

    def acquire(self, key: str, token: str, ttl_s: float) -> bool:
        with self._answer():
            return bool(self._client.set(self._prefix + key, token, nx=True, px=int(ttl_s * 1000)))

    def renew(self, key: str, token: str, ttl_s: float) -> bool:
        with self._answer():
            k = self._prefix + key
            if self._client.get(k) != token.encode():
                return False
            return bool(self._client.pexpire(k, int(ttl_s * 1000)))

    def release(self, key: str, token: str) -> None:
        with self._answer():
            k = self._prefix + key
            if self._client.get(k) == token.encode():
                self._client.delete(k)

    def ping(self) -> None:
        with self._answer():
            self._client.ping()

    def close(self) -> None:
        self._client.close()


def open_store(url: str | None) -> Store:
    """The store a URL names: None, "" or ``memory`` for this process, ``file:///path``, ``redis://...``
    (or ``rediss://``, ``unix://`` for Redis over TLS or a socket)."""
    text = (url or "").strip()
    if text in ("", "memory", "memory://"):
        return MemoryStore()
    parts = urlsplit(text)
    if parts.scheme == "file":
        if not parts.path or parts.netloc not in ("", "localhost"):
            raise StoreError(f"a folder store is file:///absolute/path, not {text!r}")
        return FolderStore(parts.path)
    if parts.scheme in ("redis", "rediss", "unix"):
        return RedisStore(text)
    raise StoreError(
        f"unknown trace store {text!r}: use file:///path (workers of one host) or redis://host:6379/0 "
        "(several hosts), or leave it unset (this process only)"
    )


_current: Store | None = None
_current_lock = threading.Lock()


def configure(store: str | Store | None) -> Store:
    """Use ``store`` (a URL or a Store) for the traces of this process from now on; returns it."""
    global _current
    new = store if isinstance(store, Store) else open_store(store)
    with _current_lock:
        old, _current = _current, new
    if old is not None and old is not new:
        old.close()
    return new


def current() -> Store:
    """The configured store: the last ``configure``'s, else ``$TVD_STORE``'s, else this process's memory."""
    global _current
    with _current_lock:
        if _current is None:
            _current = open_store(os.environ.get(STORE_ENV))
        return _current


def configure_package(*, store: str | None = None) -> None:
    """``torchvista_dash.configure(store=URL)``: where this process shares its traces (see the module), in
    a user's own app; checked now, so an unreachable store is an error here, not in every page."""
    new = open_store(store)
    new.ping()
    configure(new)
