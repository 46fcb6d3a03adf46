from userdir.cache import TTLCache
from userdir.directory import DuplicateEmail, User, UserDirectory, UserNotFound
from userdir.store import MemoryStore

__all__ = ["DuplicateEmail", "MemoryStore", "TTLCache", "User", "UserDirectory", "UserNotFound"]
