"""gpuspans.Error, which every failed call into the library raises."""

from __future__ import annotations


class Error(Exception):
    """A failed call: status is the gs_hub_status, name its name."""

    def __init__(self, status: int, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}" if message else name)
        self.status = status
        self.name = name
