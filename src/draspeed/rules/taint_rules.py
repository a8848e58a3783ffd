"""Applying DeviceTaintRules to ResourceSlices, as kube-scheduler does before allocating.

The scheduler never sees raw slices when DRADeviceTaintRules is on: its slice
tracker (``resourceslice/tracker``) appends the taint of every matching rule to
the matching devices. A rule's ``deviceSelector`` narrows by driver, pool and
device name, and (in the API versions that have them) by a DeviceClass's CEL
selectors and its own CEL selectors. A rule naming a class that does not exist
applies to nothing; a selector that fails at run time does not match; a
selector that does not compile is an error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from draspeed.api.model import (
    Device,
    DeviceClass,
    DeviceTaint,
    DeviceTaintRule,
    ResourceSlice,
)
from draspeed.cel import compile_selector, device_input
from draspeed.errors import CELCompileError, CELRuntimeError, DraspeedError
from draspeed.rules import texts


class TaintRuleError(DraspeedError):
    """A rule's selector does not compile; ``str()`` is upstream's text."""


def _selector_expressions(
    rule: DeviceTaintRule, classes: dict[str, DeviceClass]
) -> tuple[list[str], list[str]] | None:
    """(class expressions, rule expressions), or None when the rule's class does not exist."""
    selector = rule.device_selector
    if selector is None:
        return [], []
    class_exprs: list[str] = []
    if selector.device_class_name is not None:
        device_class = classes.get(selector.device_class_name)
        if device_class is None:
            return None
        class_exprs = [s.cel.expression for s in device_class.spec.selectors if s.cel is not None]
    rule_exprs = [s.cel.expression for s in selector.selectors if s.cel is not None]
    return class_exprs, rule_exprs


def _device_matches(
    rule: DeviceTaintRule,
    driver: str,
    device: Device,
    class_exprs: list[str],
    rule_exprs: list[str],
    *,
    list_type_attributes: bool,
    consumable_capacity: bool,
) -> bool:
    selector = rule.device_selector
    if selector is not None and selector.device is not None and selector.device != device.name:
        return False
    if not class_exprs and not rule_exprs:
        return True
    # The tracker's CEL input carries driver, attributes and capacity only.
    plain = dataclasses.replace(device, allow_multiple_allocations=None)
    dev = device_input(
        driver,
        plain,
        list_type_attributes=list_type_attributes,
        consumable_capacity=consumable_capacity,
    )
    for label, exprs in (("class", class_exprs), ("rule", rule_exprs)):
        for index, expression in enumerate(exprs):
            try:
                compiled = compile_selector(expression)
            except CELCompileError as err:
                owner = f"DeviceTaintRule {rule.metadata.name}"
                if label == "class" and selector:
                    owner += f": class {selector.device_class_name}"
                raise TaintRuleError(texts.selector_compile_error(owner, index, str(err))) from err
            try:
                if not compiled.matches(dev):
                    return False
            except CELRuntimeError:
                return False
    return True


def apply_taint_rules(
    slices: Sequence[ResourceSlice],
    rules: Sequence[DeviceTaintRule],
    classes: Sequence[DeviceClass] = (),
    *,
    list_type_attributes: bool = True,
    consumable_capacity: bool = True,
) -> list[ResourceSlice]:
    """The slices with every matching rule's taint appended to the matching devices.

    Slices no rule touches are returned as they are; patched ones are copies (the
    input objects are never modified). Rules apply in the order given.
    """
    if not rules:
        return list(slices)
    by_name = {c.metadata.name: c for c in classes}
    patched_slices: list[ResourceSlice] = []
    for slice_ in slices:
        spec = slice_.spec
        added: dict[int, list[DeviceTaint]] = {}
        for rule in rules:
            selector = rule.device_selector
            if selector is not None:
                if selector.driver is not None and selector.driver != spec.driver:
                    continue
                if selector.pool is not None and selector.pool != spec.pool.name:
                    continue
            expressions = _selector_expressions(rule, by_name)
            if expressions is None:
                continue
            for index, device in enumerate(spec.devices):
                if _device_matches(
                    rule,
                    spec.driver,
                    device,
                    *expressions,
                    list_type_attributes=list_type_attributes,
                    consumable_capacity=consumable_capacity,
                ):
                    added.setdefault(index, []).append(dataclasses.replace(rule.taint))
        if not added:
            patched_slices.append(slice_)
            continue
        devices = [
            dataclasses.replace(device, taints=[*device.taints, *added[i]])
            if i in added
            else device
            for i, device in enumerate(spec.devices)
        ]
        patched_slices.append(
            dataclasses.replace(slice_, spec=dataclasses.replace(spec, devices=devices))
        )
    return patched_slices
