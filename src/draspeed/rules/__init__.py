"""Engine-neutral DRA allocation rules shared by the reference and the compiled allocator.

Everything here is a pure function or a small value type: node selection, taint
tolerations, consumable-capacity arithmetic, the allocated state of a cluster,
pool gathering, DeviceTaintRule patching and the construction of an
``AllocationResult`` from chosen devices. None of it searches; the engines do.
"""

from __future__ import annotations

from draspeed.rules.ids import DeviceID, PoolID, SharedDeviceID

__all__ = ["DeviceID", "PoolID", "SharedDeviceID"]
