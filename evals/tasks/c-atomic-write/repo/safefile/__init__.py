from safefile.atomic import atomic_write_bytes, atomic_write_text, atomic_writer, read_json, update_json
from safefile.lock import FileLock, LockTimeout

__all__ = ["FileLock", "LockTimeout", "atomic_write_bytes", "atomic_write_text", "atomic_writer", "read_json",
           "update_json"]
