"""Identifiers of pools and devices, printed the way upstream prints them."""

from __future__ import annotations

from typing import NamedTuple


class PoolID(NamedTuple):
    """A resource pool is identified by its driver and its name."""

    driver: str
    pool: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}"


class DeviceID(NamedTuple):
    """A device is identified by driver, pool and device name (``driver/pool/device``)."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"

    @property
    def pool_id(self) -> PoolID:
        return PoolID(self.driver, self.pool)


class SharedDeviceID(NamedTuple):
    """One share of a device that allows multiple allocations."""

    driver: str
    pool: str
    device: str
    share_id: str

    def __str__(self) -> str:
        text = f"{self.driver}/{self.pool}/{self.device}"
        return f"{text}/{self.share_id}" if self.share_id else text

    @property
    def device_id(self) -> DeviceID:
        return DeviceID(self.driver, self.pool, self.device)
