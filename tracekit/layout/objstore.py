"""An object store (``s3://bucket/prefix``) through pyarrow's S3 filesystem, configured from the environment
as the AWS tools read it, and its failures said in one line (a missing bucket, credentials refused, an
endpoint that cannot be reached). What a run in a store looks like is remote.py's.

pyarrow (the AWS SDK) reads the credentials itself: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_SESSION_TOKEN, AWS_PROFILE and ~/.aws/credentials. What it does not read, this module gives it:
AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (an S3-compatible server: MinIO, Ceph, moto) as its endpoint, and
AWS_REGION or AWS_DEFAULT_REGION as its region.
"""

from __future__ import annotations

import contextlib
import os
import re

SCHEMES = ("s3",)
_STORE_URL = re.compile(r"^s3://", re.IGNORECASE)
CONNECT_TIMEOUT_S = 10  # an endpoint that does not answer: said after this, not after the SDK's minutes
THREADS = 8  # files moved at once (an object store's latency, not its bandwidth, bounds one at a time)


def is_store_url(path) -> bool:
    """``path`` names a run in an object store tracekit reads and writes (``s3://bucket/prefix``)."""
    return isinstance(path, str) and bool(_STORE_URL.match(path))


def endpoint() -> str | None:
    """The S3 endpoint the AWS tools would use: AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL (None: AWS)."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def region() -> str | None:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None


class Store:
    """One run's place in an object store: its bucket, its prefix, the filesystem that reaches it."""

    def __init__(self, url: str, error=None):
        from ..errors import TracekitError

        self.url = url.rstrip("/")
        self.error = error or TracekitError  # the class a failure is raised as (RunError for a reader)
        rest = self.url.split("://", 1)[1]
        self.bucket, _, self.prefix = rest.partition("/")
        self.prefix = self.prefix.strip("/")
        if not self.bucket or not self.prefix:
            raise self.error(f"{url}: a run in an object store is s3://BUCKET/PREFIX (a prefix of its own in the "
                             "bucket, never the bucket's top); name one, e.g. s3://my-bucket/runs/job-1")
        self._fs = None

    @property
    def fs(self):
        if self._fs is None:
            import pyarrow.fs as pafs

            kw = {"connect_timeout": CONNECT_TIMEOUT_S,
                  "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=3)}
            if endpoint():
                kw["endpoint_override"] = endpoint()
            if region():
                kw["region"] = region()
            try:
                self._fs = pafs.S3FileSystem(**kw)
            except (OSError, ValueError, TypeError) as exc:
                raise self.error(f"{self.url}: the object store cannot be configured ({exc}); check AWS_ENDPOINT_URL "
                                 "and AWS_REGION") from None
        return self._fs

    def key(self, rel: str = "") -> str:
        """The filesystem path of ``rel`` (a path inside the run, '/'-separated) in the bucket."""
        return "/".join(p for p in (self.bucket, self.prefix, rel.strip("/")) if p)

    def where(self) -> str:
        return endpoint() or "AWS S3 (no AWS_ENDPOINT_URL set)"

    def failure(self, exc: BaseException, doing: str):
        """One line for a store's failure: what it was doing, why, and what to do."""
        text = str(exc).replace("\n", " ")
        if "NETWORK_CONNECTION" in text or "curlCode" in text or "Could not connect" in text:
            return self.error(f"{self.url}: cannot reach the object store at {self.where()} ({_detail(text)}) while "
                              f"{doing}; check AWS_ENDPOINT_URL and that the server is up, then try again")
        if "NO_SUCH_BUCKET" in text or "NoSuchBucket" in text:
            return self.missing_bucket()
        if any(w in text for w in ("ACCESS_DENIED", "INVALID_ACCESS_KEY", "SIGNATURE_DOES_NOT_MATCH", "HTTP status 403",
                                   "AccessDenied", "InvalidAccessKeyId", "EXPIRED_TOKEN", "UNRECOGNIZED_CLIENT")):
            return self.error(f"{self.url}: the object store at {self.where()} refused the credentials while {doing} "
                              f"({_detail(text)}); set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) "
                              f"to keys allowed to read and write s3://{self.bucket}")
        if "HTTP status 301" in text or "PermanentRedirect" in text or "AuthorizationHeaderMalformed" in text:
            here = region() or "the default one"
            return self.error(f"{self.url}: the bucket {self.bucket!r} is in another region than {here} "
                              f"({_detail(text)}); set AWS_REGION to the bucket's region")
        return self.error(f"{self.url}: the object store failed while {doing} ({_detail(text)}); try again, or "
                          "check the bucket with `aws s3 ls`")

    def missing_bucket(self):
        return self.error(f"{self.url}: the bucket {self.bucket!r} does not exist at {self.where()}; create it "
                          f"(aws s3 mb s3://{self.bucket}) or name a bucket that exists")

    @contextlib.contextmanager
    def said(self, doing: str):
        """A store's failure inside as one line (FileNotFoundError passes: its caller decides what it means)."""
        try:
            yield
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise self.failure(exc, doing) from None

    def check(self) -> None:
        """The bucket is there and the credentials open it: one request, before any work."""
        import pyarrow.fs as pafs

        with self.said("looking for its bucket"):
            info = self.fs.get_file_info(self.bucket)
        if info.type == pafs.FileType.NotFound:
            raise self.missing_bucket()

    def read(self, rel: str) -> bytes | None:
        """The object ``rel`` of the run, or None where there is none."""
        try:
            with self.said(f"reading {rel}"), self.fs.open_input_stream(self.key(rel)) as f:
                return f.read()
        except FileNotFoundError:
            return None

    def write(self, rel: str, data: bytes) -> None:
        """One object, in one PUT: it is there whole or not at all."""
        with self.said(f"writing {rel}"), self.fs.open_output_stream(self.key(rel)) as f:
            f.write(data)

    def files(self, rel: str = "") -> dict[str, int]:
        """Every object under ``rel``: {its path inside the run: its size in bytes}."""
        import pyarrow.fs as pafs

        base = self.key()
        with self.said(f"listing {rel or 'the run'}"):
            infos = self.fs.get_file_info(pafs.FileSelector(self.key(rel), recursive=True, allow_not_found=True))
        return {i.path[len(base) + 1:]: i.size for i in infos if i.type == pafs.FileType.File}

    def entries(self, rel: str = "") -> list[str]:
        """The names directly under ``rel`` (objects and the prefixes that hold more), sorted."""
        import pyarrow.fs as pafs

        with self.said(f"listing {rel or 'the run'}"):
            infos = self.fs.get_file_info(pafs.FileSelector(self.key(rel), recursive=False, allow_not_found=True))
        return sorted(i.base_name for i in infos)

    def delete(self, rel: str) -> None:
        """Every object under ``rel`` (none there: nothing to do)."""
        with contextlib.suppress(FileNotFoundError), self.said(f"removing {rel}"):
            self.fs.delete_dir(self.key(rel))

    def delete_file(self, rel: str) -> None:
        with contextlib.suppress(FileNotFoundError), self.said(f"removing {rel}"):
            self.fs.delete_file(self.key(rel))

    def put_file(self, local: str, rel: str) -> None:
        """Upload one local file as the object ``rel``."""
        with self.said(f"uploading {rel}"), open(local, "rb") as src, self.fs.open_output_stream(self.key(rel)) as f:
            while block := src.read(1 << 22):
                f.write(block)

    def get_file(self, rel: str, local: str) -> int:
        """Download the object ``rel`` into ``local``; its size."""
        n = 0
        with self.said(f"downloading {rel}"), self.fs.open_input_stream(self.key(rel)) as f, open(local, "wb") as dst:
            while block := f.read(1 << 22):
                dst.write(block)
                n += len(block)
        return n

    def upload_tree(self, local: str, rel: str, last: str | None = None) -> int:
        """Every file under the local directory ``local`` into ``rel``, the file ``last`` (a path inside
        ``local``) after all the others; the bytes uploaded."""
        files = sorted(os.path.relpath(os.path.join(r, f), local).replace(os.sep, "/")
                       for r, _, fs in os.walk(local) for f in fs)
        first = [f for f in files if f != last]
        _each(lambda f: self.put_file(os.path.join(local, f), f"{rel}/{f}"), first)
        if last is not None and last in files:
            self.put_file(os.path.join(local, last), f"{rel}/{last}")
        return sum(os.path.getsize(os.path.join(local, f)) for f in files)

    def download(self, names: list[str], rel: str, local: str) -> int:
        """The objects ``rel/NAME`` for each of ``names`` into ``local/NAME``, in that order's threads; bytes."""
        for d in {os.path.dirname(os.path.join(local, n)) for n in names}:
            os.makedirs(d, exist_ok=True)
        return sum(_each(lambda n: self.get_file(f"{rel}/{n}", os.path.join(local, n)), names))


def _each(fn, items) -> list:
    """``fn`` over ``items`` on THREADS threads (the first failure raised; on a failure or Ctrl-C, the files
    not yet started are not started)."""
    if len(items) <= 1:
        return [fn(i) for i in items]
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(THREADS)
    try:
        return list(pool.map(fn, items))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _detail(text: str) -> str:
    """The AWS SDK's words, without the SDK's own prefix (its 'When ... :' and 'AWS Error')."""
    text = re.sub(r"^When [^:]*: ", "", text)
    return text.replace("AWS Error ", "").strip()[:200]
