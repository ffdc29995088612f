"""Stored files in an S3-compatible object storage (``INSPECTOR_S3_BUCKET``; README).

django-storages' ``S3Storage`` with three changes of what it does by default:

- a file opened for reading reads what is asked of it by ranged GETs
  (``RangedReader``): ``S3File`` downloads the whole object into a temporary
  file on the first read, so a timeline page, which reads a cache file's
  prefix, header and one or two chunks, would fetch all of a 50 MB cache;
- no URL is ever made: downloads go through the app's views, which check who
  asks (``url()`` raises), and no ACL is sent, so objects are as private as
  the bucket;
- a name is never overwritten: ``save`` of a taken name picks another one,
  as ``FileSystemStorage`` does, which the callers rely on.

Errors of the object storage reach the callers as ``OSError`` (a missing
object as ``FileNotFoundError``), as a file system's would.
"""

from __future__ import annotations

import io
from typing import IO, Any, cast

from botocore.exceptions import BotoCoreError, ClientError
from django.core.files.base import File
from storages.backends.s3 import S3Storage
from storages.utils import clean_name

# A read that goes on where the last one ended fetches ahead when it is small
# (a zip member's name after its header: the member's data come with it) or
# the third in a row (a file read in chunks): from READ_AHEAD, doubling up to
# READ_AHEAD_MOST. Any other read fetches exactly what it asks for: a cache
# page's chunk after a seek, the cache's header after its prefix.
SMALL_READ = 4096
READ_AHEAD = 64 * 1024
READ_AHEAD_MOST = 8 * 1024 * 1024


def _missing(error: ClientError) -> bool:
    code = error.response.get("Error", {}).get("Code", "")
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code in ("NoSuchKey", "404", "NotFound") or status == 404


class RangedReader(io.RawIOBase):
    """An object read by byte ranges, seekable; every GET pinned to the object first seen.

    A read returns all it asks for (fewer bytes only at the end), as a local
    file's does. The object's length and ETag come with the first ranged GET
    (or a HEAD when its length is asked first). Later GETs carry
    ``If-Match``: an object replaced while it is open fails the read
    (``OSError``) instead of mixing two objects' bytes, as an open local file
    keeps reading the file it opened.
    """

    def __init__(self, client: Any, bucket: str, key: str) -> None:
        super().__init__()
        self._client = client
        self._bucket = bucket
        self._key = key
        self._position = 0
        self._size: int | None = None
        self._etag: str | None = None
        # The bytes fetched last (from ``_start``), where the last read ended, and
        # how far ahead the next sequential read fetches.
        self._block = b""
        self._start = 0
        self._last_end = -1
        self._streak = 0  # reads in a row that went on where the last ended
        self._ahead = READ_AHEAD

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            position = offset
        elif whence == io.SEEK_CUR:
            position = self._position + offset
        elif whence == io.SEEK_END:
            position = self._length() + offset
        else:
            raise ValueError(f"invalid whence {whence!r}")
        if position < 0:
            raise OSError(f"negative seek position {position}")
        self._position = position
        return position

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            return self.readall()
        at = self._position - self._start
        held = self._block[at : at + size] if 0 <= at < len(self._block) else b""
        wanted = size - len(held)
        fetched = b""
        if wanted:
            start = self._position + len(held)
            self._streak = self._streak + 1 if self._position == self._last_end else 0
            if self._streak and (wanted < SMALL_READ or self._streak >= 2):
                fetch = max(wanted, self._ahead)
                self._ahead = min(self._ahead * 2, READ_AHEAD_MOST)
            else:
                fetch, self._ahead = wanted, READ_AHEAD
            block = self._get(start, fetch)
            self._block, self._start = block, start
            fetched = block[:wanted]
        data = held + fetched
        self._position += len(data)
        self._last_end = self._position
        return data

    def readall(self) -> bytes:
        return self.read(max(self._length() - self._position, 0))

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    def _length(self) -> int:
        if self._size is None:
            try:
                head = self._client.head_object(**self._where())
            except (ClientError, BotoCoreError) as error:
                raise self._os_error(error) from error
            self._size, self._etag = head["ContentLength"], self._etag or head["ETag"]
        return self._size

    def _where(self) -> dict[str, str]:
        where = {"Bucket": self._bucket, "Key": self._key}
        if self._etag is not None:
            where["IfMatch"] = self._etag
        return where

    def _get(self, start: int, length: int | None) -> bytes:
        """The bytes from ``start``: ``length`` of them, or all the rest; fewer at the end."""
        if length == 0 or (self._size is not None and start >= self._size):
            return b""
        end = "" if length is None else str(start + length - 1)
        try:
            answer = self._client.get_object(**self._where(), Range=f"bytes={start}-{end}")
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "InvalidRange":
                self._length()  # past the end (or an empty object): nothing to read
                return b""
            raise self._os_error(error) from error
        except BotoCoreError as error:
            raise self._os_error(error) from error
        if self._etag is None:
            self._etag = answer["ETag"]
        if self._size is None:
            # "bytes 0-47/1234"; a server that ignores the range answers the whole object.
            whole = answer.get("ContentRange", "").rpartition("/")[2]
            self._size = int(whole) if whole.isdigit() else answer["ContentLength"]
        try:
            return bytes(answer["Body"].read())
        except BotoCoreError as error:
            raise self._os_error(error) from error
        finally:
            answer["Body"].close()

    def _os_error(self, error: Exception) -> OSError:
        if isinstance(error, ClientError) and _missing(error):
            return FileNotFoundError(f"no stored object {self._key!r}")
        if isinstance(error, ClientError) and error.response.get("Error", {}).get("Code") in (
            "PreconditionFailed",
            "412",
        ):
            return OSError(f"the stored object {self._key!r} was replaced while it was read")
        return OSError(f"the object storage failed reading {self._key!r}: {error}")


class ObjectStorage(S3Storage):
    """``S3Storage`` reading by ranges, with private objects and names never overwritten."""

    def __init__(self, **settings: Any) -> None:
        settings.setdefault("default_acl", None)
        settings.setdefault("file_overwrite", False)
        super().__init__(**settings)

    def _open(self, name: str, mode: str = "rb") -> File:
        if mode != "rb":
            return super()._open(name, mode)
        key = self._normalize_name(clean_name(name))
        client = self.connection.meta.client  # one per thread (S3Storage.connection)
        reader = RangedReader(client, self.bucket_name, key)
        return File(cast(IO[bytes], reader), name)  # a RawIOBase: what File proxies is there

    def url(self, name: str | None, *args: Any, **kwargs: Any) -> str:
        raise NotImplementedError("stored files are served by the app's views, never by a URL")
